// Case 3: the TechEmpower "plaintext" and "json" tests as the ASP.NET Core minimal-API entry writes them.
var builder = WebApplication.CreateBuilder(args);

// Disable logging as this is not required for the benchmark
builder.Logging.ClearProviders();

var app = builder.Build();

app.MapGet("/plaintext", () => "Hello, World!");

app.MapGet("/json", () => new { message = "Hello, World!" });

app.Run();

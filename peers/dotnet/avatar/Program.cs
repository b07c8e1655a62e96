// Case 5: the seven-line random redirect; `avatar PORT N [SCHEME]` (defaults 5001, 0 and http), k uniform in 0..N.
// Over https, Kestrel's certificate comes from its configuration (Kestrel__Certificates__Default__Path, as the lab
// sets it).
var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders(); // the one line added to the write-up's seven: no console logging
var app = builder.Build();
var port = args.Length > 0 ? args[0] : "5001";
var max = args.Length > 1 ? int.Parse(args[1]) : 0;
app.MapGet("/", () => Results.Redirect($"https://avatar.spacefox.fr/Renard-{Random.Shared.Next(max + 1)}.png"));
app.Run($"{(args.Length > 2 ? args[2] : "http")}://127.0.0.1:{port}");

// Case 2, the freight quote API: POST /freight/quote sums the weight of a cart and prices it for a CEP from the
// table `hotpath freight init` writes (SQLite). Two versions of one service, as hotpath's `serve freight`:
//   --variant churn  the write-up's original (Churn.cs): classes, List<T>, LINQ, a query per request, strings built;
//   --variant lean   its fix (Lean.cs): value types, the table in struct arrays, pooled buffers, no allocation of
//                    its own per request.
// Both answer exactly as hotpath's freight service does: the same verdicts, details, statuses and JSON.
//   freight --urls http://127.0.0.1:5080 --db freight.sqlite --variant lean
using Freight;

var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders();

var db = builder.Configuration["Db"] ?? "freight.sqlite";
var variant = builder.Configuration["Variant"] ?? "lean";
if (variant is not ("lean" or "churn"))
{
    Console.Error.WriteLine($"freight: bad --variant '{variant}' (lean or churn)");
    return 2;
}
if (!File.Exists(db))
{
    Console.Error.WriteLine($"freight: cannot load {db}: no such file (hotpath freight init --db {db} makes one)");
    return 2;
}

var app = builder.Build();

if (variant == "lean")
{
    var table = FreightTable.Load(db); // read once: a lookup is a binary search over struct arrays
    app.MapPost("/freight/quote", (RequestDelegate)(context => Lean.QuoteAsync(context, table)));
}
else
{
    var connectionString = $"Data Source={db};Mode=ReadOnly";
    app.MapPost("/freight/quote", (RequestDelegate)(context => Churn.QuoteAsync(context, connectionString)));
}
// hotpath's router answers every other request: a path it does not know is 404, a known path with another method
// 405 with Allow, both as problem details. Every path and method, "/" included, ends up here.
app.MapFallback("{**path}", (RequestDelegate)Problems.NoRouteAsync);

app.Run();
return 0;

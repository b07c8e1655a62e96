// Case 1, the upstream (the write-up's First.Api): GET / calls the weather service's /weatherForecast `calls`
// times (100 by default) through one shared HttpClient, sequentially, all at once, or at most `limit` at a time
// (a SemaphoreSlim), and returns one of the results at random.
//   ?strategy=sequential|all|bounded&limit=10&calls=100; the weather service from --upstream (or --WeatherUrl).
//   --otel-metrics true: OpenTelemetry metrics at GET /metrics.
using System.Net.Sockets;
using System.Text.Json;

var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders();
// Bad requests and failed calls are answered as problem details (application/problem+json).
builder.Services.AddProblemDetails();
if (!builder.AddOtelMetrics("aggregator"))
{
    return 2;
}

var upstream = builder.Configuration["Upstream"] ?? builder.Configuration["WeatherUrl"] ?? "http://127.0.0.1:5176";

// One client for the whole application, its pooled connections renewed every 5 minutes.
var httpClient = new HttpClient(new SocketsHttpHandler { PooledConnectionLifetime = TimeSpan.FromMinutes(5) })
{
    BaseAddress = new Uri(upstream),
    Timeout = TimeSpan.FromSeconds(10),
};

var app = builder.Build();
app.UseStatusCodePages();
app.MapOtelMetrics();

app.MapGet("/", async (string? strategy, int? limit, int? calls) =>
{
    strategy ??= "sequential";
    if (strategy is not ("sequential" or "all" or "bounded"))
    {
        return Results.Problem("strategy must be sequential, all or bounded", statusCode: 400);
    }
    if (limit is < 1 or > 100000)
    {
        return Results.Problem("limit must be a whole number from 1 to 100000", statusCode: 400);
    }
    if (calls is < 1 or > 100000)
    {
        return Results.Problem("calls must be a whole number from 1 to 100000", statusCode: 400);
    }
    var count = calls ?? 100;

    WeatherForecast[][] results;
    try
    {
        results = strategy switch
        {
            "sequential" => await Sequential(count),
            "all" => await Task.WhenAll(Enumerable.Range(0, count).Select(_ => GetForecasts())),
            _ => await Bounded(count, limit ?? 10),
        };
    }
    catch (TaskCanceledException e) when (e.InnerException is TimeoutException)
    {
        return Results.Problem($"GET {upstream}/weatherForecast ({strategy}): {e.Message}", statusCode: 504);
    }
    catch (Exception e) when (e is HttpRequestException or JsonException or SocketException)
    {
        return Results.Problem($"GET {upstream}/weatherForecast ({strategy}): {e.Message}", statusCode: 502);
    }

    return Results.Ok(results[Random.Shared.Next(results.Length)]);
});

app.Run();
return 0;

async Task<WeatherForecast[]> GetForecasts() =>
    await httpClient.GetFromJsonAsync<WeatherForecast[]>("/weatherForecast")
    ?? throw new JsonException("the weather service answered null");

async Task<WeatherForecast[][]> Sequential(int count)
{
    var results = new WeatherForecast[count][];
    for (var i = 0; i < count; i++)
    {
        results[i] = await GetForecasts();
    }
    return results;
}

// At most `limit` calls in flight: the semaphore lets one in as another leaves, like a bouncer.
async Task<WeatherForecast[][]> Bounded(int count, int limit)
{
    using var bouncer = new SemaphoreSlim(limit);
    return await Task.WhenAll(Enumerable.Range(0, count).Select(async _ =>
    {
        await bouncer.WaitAsync();
        try
        {
            return await GetForecasts();
        }
        finally
        {
            bouncer.Release();
        }
    }));
}

record WeatherForecast(DateOnly Date, int TemperatureC, int TemperatureF, string? Summary);

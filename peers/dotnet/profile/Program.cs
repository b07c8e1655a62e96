// Case 4, the user-profile endpoint whose backing call takes `Delay` milliseconds (2000 by default, --delay MS):
//   GET /profile/sync/{id}     blocks its request thread for the whole call (THE ANTI-PATTERN);
//   GET /profile/async/{id}    awaits the call: the thread serves other requests meanwhile (the fix);
//   GET /profile/offload/{id}  awaits Task.Run of the blocking call: a synchronous-only library wrapped in an
//                              asynchronous method, which frees the request thread by taking another pool thread.
// All three answer {"id":42,"name":"User 42","email":"user42@example.com"}; an id that is not an integer is 404.
//   profile --urls http://127.0.0.1:5090 --delay 2000 [--otel-metrics true]   (OpenTelemetry metrics at GET /metrics)
var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders();

var delay = builder.Configuration.GetValue("Delay", 2000);
if (delay < 0)
{
    Console.Error.WriteLine($"profile: bad --delay {delay} (milliseconds, 0 or more)");
    return 2;
}
if (!builder.AddOtelMetrics("profile"))
{
    return 2;
}

var app = builder.Build();
app.MapOtelMetrics();

// THE ANTI-PATTERN: Thread.Sleep stands in for a synchronous I/O call (a blocking database driver or HTTP client).
// The thread-pool thread serving the request does nothing else until it returns; under load the pool runs out of
// threads, requests queue, time out, and the server answers 503.
app.MapGet("/profile/sync/{id:long}", (long id) =>
{
    Thread.Sleep(delay);
    return new UserProfile(id, $"User {id}", $"user{id}@example.com");
});

// The fix: the same call awaited; no thread is held while it waits.
app.MapGet("/profile/async/{id:long}", async (long id) =>
{
    await Task.Delay(delay);
    return new UserProfile(id, $"User {id}", $"user{id}@example.com");
});

// A synchronous-only call wrapped in Task.Run: the request thread is freed, but another pool thread blocks in its
// place, so it costs as many threads as the synchronous version and must be bounded.
app.MapGet("/profile/offload/{id:long}", async (long id) =>
{
    await Task.Run(() => Thread.Sleep(delay));
    return new UserProfile(id, $"User {id}", $"user{id}@example.com");
});

app.Run();
return 0;

record UserProfile(long Id, string Name, string Email);

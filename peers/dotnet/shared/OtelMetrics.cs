// Opt-in OpenTelemetry metrics for the originals that include this file (profile and aggregator): the way a real
// ASP.NET Core service exposes them, with the OpenTelemetry .NET SDK and its Prometheus exporter, scraped at
// GET /metrics in Prometheus's text format. Off unless the configuration switch `otel-metrics` is true
// (`--otel-metrics true` on the command line, or `OtelMetrics=true` in the environment): off, nothing is registered,
// no meter is listened to and no endpoint is added, so the service runs exactly as without this file. Every use of
// an OpenTelemetry type is in a method of its own that only the switch calls (and never inlined): off, those methods
// are never compiled, so not one OpenTelemetry assembly is even loaded.
//   builder.AddOtelMetrics("profile") before Build(), app.MapOtelMetrics() after it.
using System.Runtime.CompilerServices;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;

static class OtelMetrics
{
    // The meters read: ASP.NET Core's hosting (http.server.*) and Kestrel's (kestrel.*), HttpClient's
    // (http.client.*) and the runtime's own System.Runtime (dotnet.*: thread pool, GC, CPU, exceptions; .NET 9+).
    static readonly string[] Meters =
    [
        "Microsoft.AspNetCore.Hosting",
        "Microsoft.AspNetCore.Server.Kestrel",
        "System.Net.Http",
        "System.Runtime",
    ];

    // The switch: `otel-metrics` (the command line's --otel-metrics) or `OtelMetrics` (an environment variable).
    // Absent is off; a value that is not true or false is an error (null).
    static bool? Enabled(IConfiguration configuration)
    {
        var value = configuration["otel-metrics"] ?? configuration["OtelMetrics"];
        if (value is null)
        {
            return false;
        }
        return bool.TryParse(value, out var enabled) ? enabled : null;
    }

    // Registers the meter provider and the exporter when the switch is on; false (with one line on stderr) when
    // its value is not a boolean, for the caller to exit 2 as with its other bad options.
    public static bool AddOtelMetrics(this WebApplicationBuilder builder, string service)
    {
        var enabled = Enabled(builder.Configuration);
        if (enabled is null)
        {
            Console.Error.WriteLine(
                $"{service}: bad --otel-metrics {builder.Configuration["otel-metrics"] ?? builder.Configuration["OtelMetrics"]} (true or false)");
            return false;
        }
        if (enabled.Value)
        {
            Register(builder.Services, service);
        }
        return true;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Register(IServiceCollection services, string service) =>
        services.AddOpenTelemetry()
            .ConfigureResource(resource => resource.AddService(service))
            .WithMetrics(metrics => metrics.AddMeter(Meters).AddPrometheusExporter());

    // GET /metrics, when the switch is on.
    public static void MapOtelMetrics(this WebApplication app)
    {
        if (Enabled(app.Configuration) == true)
        {
            MapEndpoint(app);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MapEndpoint(WebApplication app) => app.MapPrometheusScrapingEndpoint();
}

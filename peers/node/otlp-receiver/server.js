// An OTLP/HTTP metrics receiver for hotpath's tests: POST /v1/metrics (application/x-protobuf) is decoded with
// OpenTelemetry's own generated protocol code (@opentelemetry/otlp-transformer's protobufjs root), as a collector
// would read it, and kept; GET /received answers what came, as JSON. Usage: node server.js PORT [--reject N]
// (--reject: answer each export with a partial success rejecting N data points). Prints "listening on
// http://127.0.0.1:PORT" once ready.
'use strict';
const http = require('http');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');

const { ExportMetricsServiceRequest, ExportMetricsServiceResponse } = root.opentelemetry.proto.collector.metrics.v1;
const args = process.argv.slice(2);
const port = Number(args[0] || 4318);
const rejectAt = args.indexOf('--reject');
const reject = rejectAt >= 0 ? Number(args[rejectAt + 1]) : 0;

const received = { requests: 0, refused: [], last: null, contentTypes: [] };

function attributes(list) {
  const out = {};
  for (const kv of list || []) {
    const v = kv.value || {};
    out[kv.key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? null;
  }
  return out;
}

// The request as plain JSON: each metric with its kind and its points (numbers as numbers).
function summarise(request) {
  const metrics = [];
  for (const rm of request.resourceMetrics || []) {
    const resource = attributes(rm.resource && rm.resource.attributes);
    for (const sm of rm.scopeMetrics || []) {
      for (const m of sm.metrics || []) {
        const entry = { name: m.name, unit: m.unit, description: m.description, resource, scope: sm.scope && sm.scope.name };
        const points = (list, f) => (list || []).map((p) => Object.assign({ attributes: attributes(p.attributes),
          start: Number(p.startTimeUnixNano), time: Number(p.timeUnixNano) }, f(p)));
        if (m.sum) {
          entry.kind = 'sum';
          entry.monotonic = m.sum.isMonotonic;
          entry.temporality = m.sum.aggregationTemporality;
          entry.points = points(m.sum.dataPoints, (p) => ({ value: p.asInt != null ? Number(p.asInt) : p.asDouble }));
        } else if (m.gauge) {
          entry.kind = 'gauge';
          entry.points = points(m.gauge.dataPoints, (p) => ({ value: p.asInt != null ? Number(p.asInt) : p.asDouble }));
        } else if (m.histogram) {
          entry.kind = 'histogram';
          entry.temporality = m.histogram.aggregationTemporality;
          entry.points = points(m.histogram.dataPoints, (p) => ({ count: Number(p.count), sum: p.sum,
            bucketCounts: (p.bucketCounts || []).map(Number), explicitBounds: p.explicitBounds || [] }));
        } else {
          entry.kind = 'other';
        }
        metrics.push(entry);
      }
    }
  }
  return metrics;
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/received') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(received));
    return;
  }
  if (req.method !== 'POST' || req.url !== '/v1/metrics') {
    res.writeHead(404);
    res.end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received.contentTypes.push(req.headers['content-type'] || '');
    let request;
    try {
      request = ExportMetricsServiceRequest.decode(Buffer.concat(chunks));
    } catch (e) {
      received.refused.push(String(e.message || e));
      res.writeHead(400, { 'Content-Type': 'text/plain' });
      res.end('cannot decode: ' + (e.message || e));
      return;
    }
    received.requests += 1;
    received.last = summarise(ExportMetricsServiceRequest.toObject(request, { longs: String, defaults: false }));
    const answer = reject > 0
      ? { partialSuccess: { rejectedDataPoints: reject, errorMessage: 'planted rejection' } }
      : {};
    const body = ExportMetricsServiceResponse.encode(ExportMetricsServiceResponse.create(answer)).finish();
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
    res.end(Buffer.from(body));
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

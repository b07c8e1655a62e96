#!/usr/bin/env node
// The inventory service and its pricing downstream (README.md beside this file): plain node:http, instrumented
// as Node services are with OpenTelemetry metrics exposed by OpenTelemetry's Prometheus exporter. Two problems
// are planted on purpose, for hotpath's `lab diagnose` to find:
//   GET /inventory/:sku           8 calls to the pricing service, each awaited before the next (sequential)
//   GET /inventory/together/:sku  the fix: the same 8 calls at once (Promise.all)
//   GET /checksum/:n              n key derivations (PBKDF2) done synchronously: the event loop is blocked
//   GET /health
//
//   node server.js [--port P] [--metrics-port M] [--downstream URL]   the inventory service (5300, 9464,
//                                                                     http://127.0.0.1:5301)
//   node server.js --role pricing [--port Q] [--delay MS]             the pricing service: GET /price/:sku
//                                                                     answers after MS ms (5301, 5)
'use strict';

const USAGE =
    'usage: node server.js [--role inventory] [--port P] [--metrics-port M] [--downstream http://HOST:PORT]' +
    ' | node server.js --role pricing [--port P] [--delay MS]';

let who = 'inventory'; // the role, in front of every message

function fail(message) {
    process.stderr.write(`${who}: ${message} (${USAGE})\n`);
    process.exit(2);
}

function integer(name, text, min, max) {
    if (text === undefined || !/^[0-9]{1,9}$/.test(text) || Number(text) < min || Number(text) > max)
        fail(`${name} takes an integer from ${min} to ${max}, not ${JSON.stringify(text ?? '')}`);
    return Number(text);
}

function parseArguments(argv) {
    const given = {};
    const known = ['--role', '--port', '--metrics-port', '--downstream', '--delay'];
    for (let i = 0; i < argv.length; i += 2) {
        let [name, value] = [argv[i], argv[i + 1]];
        const eq = name.indexOf('=');
        if (name.startsWith('--') && eq > 0) {
            [name, value] = [name.slice(0, eq), name.slice(eq + 1)];
            i -= 1;
        }
        if (name === '--help' || name === '-h') {
            process.stdout.write(`${USAGE}\n`);
            process.exit(0);
        }
        if (!known.includes(name)) fail(`unknown argument ${JSON.stringify(name)}`);
        if (value === undefined) fail(`${name} needs a value`);
        given[name] = value;
    }
    const role = given['--role'] ?? 'inventory';
    if (role !== 'inventory' && role !== 'pricing') fail(`--role is inventory or pricing, not ${JSON.stringify(role)}`);
    who = role;
    const only = role === 'pricing' ? ['--metrics-port', '--downstream'] : ['--delay'];
    for (const name of only) if (name in given) fail(`${name} is not an option of --role ${role}`);
    const options = { role, port: integer('--port', given['--port'] ?? (role === 'pricing' ? '5301' : '5300'), 1, 65535) };
    if (role === 'pricing') {
        options.delayMs = integer('--delay', given['--delay'] ?? '5', 0, 60000);
        return options;
    }
    options.metricsPort = integer('--metrics-port', given['--metrics-port'] ?? '9464', 1, 65535);
    if (options.metricsPort === options.port) fail('--metrics-port must differ from --port');
    const downstream = given['--downstream'] ?? 'http://127.0.0.1:5301';
    let url;
    try {
        url = new URL(downstream);
    } catch {
        fail(`--downstream is not a URL: ${JSON.stringify(downstream)}`);
    }
    if (url.protocol !== 'http:' || url.search || url.hash || url.username)
        fail(`--downstream takes http://HOST[:PORT][/PATH], not ${JSON.stringify(downstream)}`);
    options.downstream = url.origin + url.pathname.replace(/\/+$/, '');
    return options;
}

const options = parseArguments(process.argv.slice(2));

// Telemetry first: the HTTP instrumentation patches node:http as it is loaded, so it is set up before the
// service's own require('node:http') below. The pricing service is the downstream and reports nothing.
let meterProvider;
let serverDuration;
let activeRequests;
if (options.role === 'inventory') {
    // Stable HTTP semantic conventions (seconds, http.request.method, ...). instrumentation-http 0.54 to 0.220
    // read this variable; later versions, this one among them, know only the stable conventions.
    process.env.OTEL_SEMCONV_STABILITY_OPT_IN ??= 'http';
    const { metrics, ValueType } = require('@opentelemetry/api');
    const { MeterProvider } = require('@opentelemetry/sdk-metrics');
    const { defaultResource, detectResources, processDetector, resourceFromAttributes } = require('@opentelemetry/resources');
    const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
    const { RuntimeNodeInstrumentation } = require('@opentelemetry/instrumentation-runtime-node');
    const { HostMetrics } = require('@opentelemetry/host-metrics');

    const exporter = new PrometheusExporter({ host: '127.0.0.1', port: options.metricsPort }, (error) => {
        if (error) {
            process.stderr.write(`inventory: the metrics port ${options.metricsPort}: ${error.message}\n`);
            process.exit(1);
        }
        ready('metrics');
    });
    meterProvider = new MeterProvider({
        // What NodeSDK would give: telemetry.sdk.*, process.* (process.runtime.name "nodejs", ...), the service.
        resource: defaultResource()
            .merge(detectResources({ detectors: [processDetector] }))
            .merge(resourceFromAttributes({ 'service.name': 'inventory', 'service.version': '1.0.0' })),
        readers: [exporter],
    });
    metrics.setGlobalMeterProvider(meterProvider);
    registerInstrumentations({
        meterProvider,
        instrumentations: [
            // Outgoing calls: http.client.request.duration. Its server metric would have no http.route on a
            // plain node:http server (a framework's instrumentation sets the route), so incoming requests are
            // measured below instead.
            new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
            // nodejs.eventloop.delay.*, nodejs.eventloop.utilization, nodejs.eventloop.time, v8js.*
            new RuntimeNodeInstrumentation(),
        ],
    });
    // process.cpu.time, process.cpu.utilization, process.memory.usage (the system.* groups are left out).
    new HostMetrics({ meterProvider, metricGroups: ['process.cpu', 'process.memory'] }).start();

    // The server metrics of the stable HTTP semantic conventions, with the route template.
    const meter = metrics.getMeter('inventory', '1.0.0');
    serverDuration = meter.createHistogram('http.server.request.duration', {
        description: 'Duration of HTTP server requests.',
        unit: 's',
        valueType: ValueType.DOUBLE,
        advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10] },
    });
    activeRequests = meter.createUpDownCounter('http.server.active_requests', {
        description: 'Number of active HTTP server requests.',
        unit: '{request}',
    });
}

const http = require('node:http');
const crypto = require('node:crypto');

const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);
const SKU = '([A-Za-z0-9_-]{1,64})';

function send(res, status, body, headers = {}) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        ...headers,
    });
    res.end(res.req.method === 'HEAD' ? undefined : text);
}

// A route table: [template, pattern, handler]. The first whose pattern matches the path answers.
function router(routes) {
    return (req, res, setRoute) => {
        const path = req.url.split('?', 1)[0];
        for (const [template, pattern, handler] of routes) {
            const match = pattern.exec(path);
            if (!match) continue;
            setRoute(template);
            if (req.method !== 'GET' && req.method !== 'HEAD')
                return send(res, 405, { error: 'method not allowed', method: req.method, route: template }, { allow: 'GET, HEAD' });
            return handler(req, res, ...match.slice(1));
        }
        send(res, 404, { error: 'not found', path });
    };
}

function serve(route) {
    return http.createServer({ keepAliveTimeout: 65000 }, (req, res) => {
        if (!serverDuration) return route(req, res, () => {});
        const start = performance.now();
        const method = KNOWN_METHODS.has(req.method) ? req.method : '_OTHER';
        const base = { 'http.request.method': method, 'url.scheme': 'http' };
        activeRequests.add(1, base);
        let template;
        let recorded = false;
        const record = (finished) => {
            if (recorded) return;
            recorded = true;
            activeRequests.add(-1, base);
            const attributes = { ...base };
            if (template) attributes['http.route'] = template;
            if (finished) {
                attributes['http.response.status_code'] = res.statusCode;
                if (res.statusCode >= 500) attributes['error.type'] = String(res.statusCode);
            } else {
                attributes['error.type'] = 'aborted';
            }
            serverDuration.record((performance.now() - start) / 1000, attributes);
        };
        res.once('finish', () => record(true));
        res.once('close', () => record(false));
        route(req, res, (t) => (template = t));
    });
}

function listen(server, port, what) {
    server.once('error', (error) => {
        process.stderr.write(`${who}: ${what} port ${port}: ${error.message}\n`);
        process.exit(1);
    });
    server.listen(port, '127.0.0.1', () => ready(what));
}

const waiting = new Set(options.role === 'inventory' ? ['service', 'metrics'] : ['service']);
function ready(what) {
    waiting.delete(what);
    if (waiting.size > 0) return;
    if (options.role === 'pricing')
        console.log(`pricing: listening on http://127.0.0.1:${options.port} (GET /price/:sku, ${options.delayMs} ms)`);
    else
        console.log(`inventory: listening on http://127.0.0.1:${options.port}, metrics on ` +
            `http://127.0.0.1:${options.metricsPort}/metrics, downstream ${options.downstream}`);
}

function priceOf(sku, warehouse) {
    const digest = crypto.createHash('sha256').update(`${sku}/${warehouse}`).digest();
    return (100 + (digest.readUInt32BE(0) % 9900)) / 100;
}

// ---- pricing: the downstream ----
function pricing() {
    const routes = router([
        ['/health', /^\/health$/, (req, res) => send(res, 200, { status: 'ok' })],
        ['/price/:sku', new RegExp(`^/price/${SKU}$`), (req, res, sku) => {
            const warehouse = new URL(req.url, 'http://x').searchParams.get('warehouse') ?? '1';
            setTimeout(() => send(res, 200, { sku, warehouse: Number(warehouse) || 1, price: priceOf(sku, warehouse), currency: 'EUR' }),
                options.delayMs);
        }],
    ]);
    return serve(routes);
}

// ---- inventory: the service ----
const WAREHOUSES = 8;
const CHECKSUM_ITERATIONS = 2500; // PBKDF2-SHA256 iterations per record: about 0.75 ms on one core here

// Keep-alive connections to the pricing service, as a service's one shared agent does.
const agent = new http.Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 512 });

class DownstreamError extends Error {
    constructor(message, status) {
        super(message);
        this.name = 'DownstreamError';
        this.status = status;
    }
}

function fetchPrice(sku, warehouse) {
    return new Promise((resolve, reject) => {
        const request = http.get(`${options.downstream}/price/${encodeURIComponent(sku)}?warehouse=${warehouse}`,
            { agent, timeout: 5000 }, (response) => {
                const chunks = [];
                response.on('data', (chunk) => chunks.push(chunk));
                response.on('error', reject);
                response.on('end', () => {
                    if (response.statusCode !== 200)
                        return reject(new DownstreamError(`pricing answered ${response.statusCode}`, 502));
                    try {
                        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')).price);
                    } catch {
                        reject(new DownstreamError('pricing answered something other than JSON', 502));
                    }
                });
            });
        request.on('timeout', () => request.destroy(new DownstreamError('pricing took over 5 s', 504)));
        request.on('error', reject);
    });
}

function quote(sku, strategy, prices) {
    let best = 0;
    for (let w = 1; w < prices.length; w += 1) if (prices[w] < prices[best]) best = w;
    return { sku, strategy, warehouses: prices.length, best: { warehouse: best + 1, price: prices[best] } };
}

async function answer(res, work) {
    try {
        send(res, 200, await work());
    } catch (error) {
        send(res, error.status ?? 502, { error: `pricing: ${error.message}` });
    }
}

function inventory() {
    const routes = router([
        ['/health', /^\/health$/, (req, res) => send(res, 200, { status: 'ok' })],
        // The fix of problem 1: the 8 calls in flight at once. (Before /inventory/:sku, which would take
        // "together" for a SKU.)
        ['/inventory/together/:sku', new RegExp(`^/inventory/together/${SKU}$`), (req, res, sku) => answer(res, async () => {
            const calls = [];
            for (let w = 1; w <= WAREHOUSES; w += 1) calls.push(fetchPrice(sku, w));
            return quote(sku, 'together', await Promise.all(calls));
        })],
        // PLANTED PROBLEM 1: each call awaited before the next: 8 round trips one after another.
        ['/inventory/:sku', new RegExp(`^/inventory/${SKU}$`), (req, res, sku) => answer(res, async () => {
            const prices = [];
            for (let w = 1; w <= WAREHOUSES; w += 1) prices.push(await fetchPrice(sku, w));
            return quote(sku, 'sequential', prices);
        })],
        // PLANTED PROBLEM 2: CPU work on the event loop: every other request waits while it runs.
        ['/checksum/:n', /^\/checksum\/([0-9]{1,4})$/, (req, res, text) => {
            const n = Number(text);
            if (n < 1 || n > 1000) return send(res, 400, { error: 'n is a number of records from 1 to 1000' });
            const sum = Buffer.alloc(32);
            for (let record = 1; record <= n; record += 1) {
                const key = crypto.pbkdf2Sync(`record-${record}`, 'inventory', CHECKSUM_ITERATIONS, 32, 'sha256');
                for (let i = 0; i < 32; i += 1) sum[i] ^= key[i];
            }
            send(res, 200, { records: n, checksum: sum.toString('hex') });
        }],
    ]);
    return serve(routes);
}

const server = options.role === 'pricing' ? pricing() : inventory();
listen(server, options.port, 'service');

let stopping = false;
async function stop() {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeAllConnections();
    if (options.role === 'inventory') {
        agent.destroy();
        await meterProvider.shutdown().catch(() => {});
    }
    process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

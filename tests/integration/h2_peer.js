// An HTTP/2 server with prior knowledge (h2c) on 127.0.0.1:PORT (argv[2]) that misbehaves on purpose, for
// h2_load_test and h2_client_test: /ok answers, /reset and /refuse reset every stream, /goaway ends each connection
// with a GOAWAY after 50 requests, /echo answers with the request's body (its length in x-received-bytes), /half
// never answers every second request of a connection, /slow answers after 100 ms with the most streams it ever had
// open at once (x-most-open). argv[3]: the streams a connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
'use strict';

const http2 = require('node:http2');

const port = Number(process.argv[2]);
// Node's default of 100 concurrent streams per connection is more than the load tests ask for (--streams 10).
const server = http2.createServer({settings: {maxConcurrentStreams: Number(process.argv[3] || 100)}});

// /slow's streams open now, and the most ever open at once, over every connection.
let open = 0;
let mostOpen = 0;

// Per connection: how many /goaway requests it answered, the stream id of the 50th (the last its GOAWAY will say
// was processed), and whether it has sent that GOAWAY.
const answered = new WeakMap();
const promised = new WeakMap();
const goneAway = new WeakSet();

server.on('stream', (stream, headers) => {
    // A stream reset here (or by the client) emits 'error': the resets are the point, not failures of this server.
    stream.on('error', () => {});
    const session = stream.session;
    const path = headers[':path'];
    if (path === '/reset') {
        // RST_STREAM CANCEL without a response (RFC 9113 section 6.4): a stream the server gave up on.
        stream.close(http2.constants.NGHTTP2_CANCEL);
        return;
    }
    if (path === '/refuse') {
        // RST_STREAM REFUSED_STREAM (RFC 9113 section 8.7): the request was not processed and may be retried.
        stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return;
    }
    if (path === '/goaway') {
        const last = promised.get(session);
        if (last !== undefined) {
            // The first stream after the 50th: the GOAWAY names the 50th as the last one processed, so that this
            // one (and any the client sent with it) is unprocessed (RFC 9113 section 6.8) and must go again on
            // another connection. Sent only now: a client with 10 streams in flight answered in batches of 10
            // could otherwise have nothing in flight past the 50th when the GOAWAY arrives.
            if (!goneAway.has(session)) {
                goneAway.add(session);
                session.goaway(http2.constants.NGHTTP2_NO_ERROR, last);
                // close() sends a GOAWAY of its own: once the first has left, which a later one may not contradict
                // (its last stream id may not be raised, RFC 9113 section 6.8).
                setImmediate(() => session.close());
            }
            // REFUSED_STREAM, after the GOAWAY, says the same (RFC 9113 section 8.7), and ends the stream here so
            // that the connection can close; the client has already given it up on reading the GOAWAY.
            stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
            return;
        }
        const count = (answered.get(session) || 0) + 1;
        answered.set(session, count);
        stream.respond({':status': 200, 'content-type': 'text/plain'});
        stream.end('ok');
        if (count === 50) {
            promised.set(session, stream.id);
        }
        return;
    }
    if (path === '/echo') {
        // The whole body first: a body larger than the stream's window (Node's 64 KiB) arrives only as the client
        // honours the window updates.
        const pieces = [];
        stream.on('data', (piece) => pieces.push(piece));
        stream.on('end', () => {
            const body = Buffer.concat(pieces);
            const expected = Number(headers['content-length']);
            const status = body.length === expected ? 200 : 400;
            stream.respond({':status': status, 'content-type': 'text/plain', 'x-received-bytes': String(body.length)});
            stream.end(body);
        });
        return;
    }
    if (path === '/half') {
        const count = (answered.get(session) || 0) + 1;
        answered.set(session, count);
        if (count % 2 === 0) {
            return; // never answered: the client's timeout resets it
        }
        stream.respond({':status': 200, 'content-type': 'text/plain'});
        stream.end('ok');
        return;
    }
    if (path === '/slow') {
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        setTimeout(() => {
            open -= 1;
            stream.respond({':status': 200, 'content-type': 'text/plain', 'x-most-open': String(mostOpen)});
            stream.end('slow');
        }, 100);
        return;
    }
    if (path === '/ok') {
        stream.respond({':status': 200, 'content-type': 'text/plain'});
        stream.end('ok');
        return;
    }
    stream.respond({':status': 404, 'content-type': 'text/plain'});
    stream.end('not found');
});

// A client that goes away mid-stream is no failure of this server.
server.on('sessionError', () => {});
server.on('streamError', () => {});

server.listen(port, '127.0.0.1', () => {
    console.log(`h2_peer: http://127.0.0.1:${port}`);
});

// The test ends it with SIGTERM.
process.on('SIGTERM', () => process.exit(0));

#!/usr/bin/python3
# HTTP/2 clients that push flow control to its edges, for h2_flow_control_test: Python's h2 package (Debian's
# python3-h2) drives the frames, and each scenario prints one line of what it saw.
#
#   h2_flow_client.py PORT zero-window   a stream whose window never opens beside one that reads
#   h2_flow_client.py PORT uploads N KB  N buffered uploads of KB KiB each, sent as the windows allow
#   h2_flow_client.py PORT duplex KB     a streamed upload answered piece by piece while it is sent
#   h2_flow_client.py PORT slow-body     a body that stops arriving, beside requests that go on
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


class client:
    def __init__(self, port, stream_window=None):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        if stream_window is not None:
            self.conn.local_settings = h2.settings.Settings(
                client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: stream_window})
        self.conn.initiate_connection()
        self.status = {}   # stream -> status
        self.bodies = {}   # stream -> bytes
        self.ended = set()
        self.resets = {}   # stream -> error code
        self.first_data_at = {}
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, path, end=True, fields=()):
        stream = self.conn.get_next_available_stream_id()
        headers = [(':method', method), (':path', path), (':scheme', 'http'), (':authority', 'test')] + list(fields)
        self.conn.send_headers(stream, headers, end_stream=end)
        self.bodies[stream] = b''
        self.flush()
        return stream

    # Reads for at most `timeout` seconds, or until done() holds. False when nothing arrived.
    def read(self, timeout, done=lambda: False, ack=lambda stream: True):
        deadline = time.monotonic() + timeout
        got = False
        while not done() and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                break
            if not data:
                self.closed = True
                break
            got = True
            for e in self.conn.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    self.status[e.stream_id] = dict(e.headers)[b':status'].decode()
                elif isinstance(e, h2.events.DataReceived):
                    self.bodies[e.stream_id] = self.bodies.get(e.stream_id, b'') + e.data
                    self.first_data_at.setdefault(e.stream_id, time.monotonic())
                    if ack(e.stream_id) and e.stream_id not in self.resets:
                        self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                elif isinstance(e, h2.events.StreamEnded):
                    self.ended.add(e.stream_id)
                elif isinstance(e, h2.events.StreamReset):
                    self.resets[e.stream_id] = int(e.error_code)
                elif isinstance(e, h2.events.ConnectionTerminated):
                    self.closed = True
            self.flush()
        return got

    def answered(self, stream):
        return stream in self.ended or stream in self.resets

    # Sends up to `n` bytes of `stream`'s body as its windows allow now; returns how many went.
    def send_some(self, stream, n, end=False):
        room = min(n, self.conn.local_flow_control_window(stream), self.conn.max_outbound_frame_size)
        if room <= 0:
            return 0
        self.conn.send_data(stream, b'x' * room, end_stream=end and room == n)
        self.flush()
        return room


def zero_window(port):
    # Every stream's window starts shut (SETTINGS_INITIAL_WINDOW_SIZE 0), the connection's is wide open. Stream 1 asks
    # for a large streamed response and is never given room; stream 3 is, and must be answered in full meanwhile.
    c = client(port, stream_window=0)
    c.conn.increment_flow_control_window(64 << 20)
    held = c.request('GET', '/produce?kb=2048')
    reads = c.request('GET', '/big?kb=512')
    c.conn.increment_flow_control_window(1 << 20, stream_id=reads)
    c.flush()
    c.read(10, done=lambda: c.answered(reads), ack=lambda s: s != held)
    time.sleep(0.5)
    probe = c.request('GET', '/written')
    c.conn.increment_flow_control_window(1 << 16, stream_id=probe)
    c.flush()
    c.read(5, done=lambda: c.answered(probe), ack=lambda s: s != held)
    started = time.monotonic()
    c.read(15, done=lambda: held in c.resets, ack=lambda s: s != held)
    print('read', len(c.bodies[reads]), 'held-status', c.status.get(held), 'held-bytes', len(c.bodies[held]),
          'written', c.bodies[probe].decode(), 'held-reset', c.resets.get(held), 'after', round(time.monotonic() - started))


def uploads(port, n, kb):
    # N uploads to a buffered route, each short of its last byte: the client sends all that the windows allow, in turn,
    # until they stop opening. Then it sends the rest, retrying any stream refused, and reads every answer.
    c = client(port)
    size = kb * 1024
    path = '/body-size'
    length = [('content-length', str(size))]
    sent = {}
    for _ in range(n):
        sent[c.request('POST', path, end=False, fields=length)] = 0
    before_end = 0
    idle_rounds = 0
    while idle_rounds < 6:
        moved = 0
        for stream in list(sent):
            if stream in c.resets:
                continue
            k = c.send_some(stream, min(16384, size - 1 - sent[stream]))
            sent[stream] += k
            moved += k
        got = c.read(0.05)
        idle_rounds = idle_rounds + 1 if moved == 0 and not got else 0
    # What the server holds (or has yet to read) now: bytes sent on the streams it did not refuse.
    before_end = sum(k for stream, k in sent.items() if stream not in c.resets)
    refused = 0
    answers = []
    deadline = time.monotonic() + 60
    while len(answers) < n and time.monotonic() < deadline and not c.closed:
        for stream in list(sent):
            if stream in c.resets:
                del sent[stream]
                refused += 1
                if c.resets[stream] == 7 and refused < 500:  # REFUSED_STREAM: not processed, safe to retry
                    sent[c.request('POST', path, end=False, fields=length)] = 0
                continue
            if stream in c.ended:
                answers.append((c.status.get(stream), c.bodies[stream].decode()))
                del sent[stream]
                continue
            if sent[stream] < size:
                sent[stream] += c.send_some(stream, min(65536, size - sent[stream]), end=True)
        c.read(0.05)
    ok = sum(1 for a in answers if a == ('200', str(size)))
    print('before-end', before_end, 'answered', ok, 'of', n, 'refused', refused)


def duplex(port, kb):
    # A streamed upload with no length: 64 KiB, then a wait for the handler's first answer (it must come before the
    # body's end), then the rest, sent as the windows allow.
    c = client(port)
    stream = c.request('PUT', '/sizes', end=False)
    first = 0
    while first < 65536 and not c.closed:
        k = c.send_some(stream, 65536 - first)
        first += k
        if k == 0:
            c.read(0.2)
    c.read(5, done=lambda: len(c.bodies[stream]) > 0)
    early = len(c.bodies[stream]) > 0
    rest = kb * 1024 - first
    while rest > 0 and not c.closed and stream not in c.resets:
        k = c.send_some(stream, rest, end=True)
        rest -= k
        if k == 0:
            c.read(0.2)
    c.read(20, done=lambda: c.answered(stream))
    lines = c.bodies[stream].decode().splitlines()
    print('early', 'yes' if early else 'no', 'status', c.status.get(stream), 'last',
          lines[-1] if lines else '', 'reset', c.resets.get(stream))


def slow_body(port):
    # Stream 1 announces 100,000 bytes, sends 10 and stops; the requests beside it must be answered, and it reset.
    c = client(port)
    slow = c.request('POST', '/body-size', end=False, fields=[('content-length', '100000')])
    c.send_some(slow, 10)
    quick = c.request('GET', '/hello')
    c.read(5, done=lambda: c.answered(quick))
    started = time.monotonic()
    c.read(15, done=lambda: slow in c.resets)
    after = c.request('GET', '/hello')
    c.read(5, done=lambda: c.answered(after))
    print('quick', c.status.get(quick), 'slow-reset', c.resets.get(slow), 'after', round(time.monotonic() - started),
          'then', c.status.get(after), c.bodies[after].decode())


if __name__ == '__main__':
    port = int(sys.argv[1])
    what = sys.argv[2]
    if what == 'zero-window':
        zero_window(port)
    elif what == 'uploads':
        uploads(port, int(sys.argv[3]), int(sys.argv[4]))
    elif what == 'duplex':
        duplex(port, int(sys.argv[3]))
    elif what == 'slow-body':
        slow_body(port)

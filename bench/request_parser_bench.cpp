// Micro benchmarks of request_parser and chunked_decoder on typical inputs; figures go to bench/RESULTS.md.
#include <hotpath/http/chunked_decoder.hpp>
#include <hotpath/http/request_parser.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

namespace {

using namespace hotpath::http;

// What wrk sends by default, plus the three fields most load tools add: 6 fields.
constexpr std::string_view wrk_get = "GET /plaintext HTTP/1.1\r\n"
                                     "Host: 127.0.0.1:8080\r\n"
                                     "User-Agent: wrk/4.2.0\r\n"
                                     "Accept: */*\r\n"
                                     "Accept-Encoding: gzip, deflate\r\n"
                                     "Connection: keep-alive\r\n"
                                     "Cache-Control: no-cache\r\n"
                                     "\r\n";

// A browser-like request as in the TechEmpower benchmarks: 8 fields.
constexpr std::string_view techempower_get =
    "GET /json HTTP/1.1\r\n"
    "Host: server\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20130501 Firefox/30.0 AppleWebKit/600.00 Chrome/30.0.0000.0 "
    "Trident/10.0 Safari/600.00\r\n"
    "Cookie: uid=12345678901234567890; __utma=1.1234567890.1234567890.1234567890.1234567890.12; wd=2560x1600\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate\r\n"
    "Connection: keep-alive\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "\r\n";

void parse_one(benchmark::State& state, std::string_view input) {
    const limits lim{};
    request_parser parser(lim);
    request_head head;
    for (auto _ : state) {
        parser.reset();
        benchmark::DoNotOptimize(input.data());
        const parse_result r = parser.parse(input, head);
        if (r.status != parse_status::complete) {
            state.SkipWithError("parse failed");
            break;
        }
        benchmark::DoNotOptimize(head);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * input.size()));
    state.SetItemsProcessed(state.iterations());
}

void bm_parse_wrk_get(benchmark::State& state) {
    parse_one(state, wrk_get);
}
void bm_parse_techempower_get(benchmark::State& state) {
    parse_one(state, techempower_get);
}

// 16 pipelined requests in one buffer, parsed one after the other as a connection does after one read.
void bm_parse_pipelined_16(benchmark::State& state) {
    std::string buffer;
    for (int i = 0; i < 16; ++i) {
        buffer += wrk_get;
    }
    const limits lim{};
    request_parser parser(lim);
    request_head head;
    for (auto _ : state) {
        std::string_view rest = buffer;
        while (!rest.empty()) {
            parser.reset();
            const parse_result r = parser.parse(rest, head);
            if (r.status != parse_status::complete) {
                state.SkipWithError("parse failed");
                return;
            }
            benchmark::DoNotOptimize(head);
            rest.remove_prefix(r.consumed);
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buffer.size()));
    state.SetItemsProcessed(state.iterations() * 16);
}

// 64 chunks of 1 KiB decoded in place; the encoded body is restored from a copy each iteration (not timed).
void bm_decode_chunked_64k(benchmark::State& state) {
    std::string encoded;
    for (int i = 0; i < 64; ++i) {
        encoded += "400\r\n" + std::string(1024, static_cast<char>('a' + i % 26)) + "\r\n";
    }
    encoded += "0\r\n\r\n";
    std::string work = encoded;
    const limits lim{};
    chunked_decoder decoder(lim);
    for (auto _ : state) {
        state.PauseTiming();
        work.assign(encoded);
        decoder.reset();
        state.ResumeTiming();
        const chunk_result r = decoder.decode(work.data(), work.size(), work.data());
        if (r.status != chunk_status::done) {
            state.SkipWithError("decode failed");
            break;
        }
        benchmark::DoNotOptimize(work.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * encoded.size()));
}

// The same body decoded into a separate buffer: no restoring copy, so no paused timing.
void bm_decode_chunked_64k_separate(benchmark::State& state) {
    std::string encoded;
    for (int i = 0; i < 64; ++i) {
        encoded += "400\r\n" + std::string(1024, static_cast<char>('a' + i % 26)) + "\r\n";
    }
    encoded += "0\r\n\r\n";
    std::string out(encoded.size(), '\0');
    const limits lim{};
    chunked_decoder decoder(lim);
    for (auto _ : state) {
        decoder.reset();
        const chunk_result r = decoder.decode(encoded.data(), encoded.size(), out.data());
        if (r.status != chunk_status::done) {
            state.SkipWithError("decode failed");
            break;
        }
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * encoded.size()));
}

BENCHMARK(bm_parse_wrk_get);
BENCHMARK(bm_parse_techempower_get);
BENCHMARK(bm_parse_pipelined_16);
BENCHMARK(bm_decode_chunked_64k);
BENCHMARK(bm_decode_chunked_64k_separate);

} // namespace

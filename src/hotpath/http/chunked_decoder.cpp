// A byte-at-a-time state machine for the chunked framing that moves chunk data in bulk (RFC 9112 §7.1).
#include <hotpath/http/chunked_decoder.hpp>

#include <hotpath/http/char_class.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace hotpath::http {
namespace {

// The values of chunked_decoder::state_, in the order the grammar visits them (RFC 9112 §7.1):
//   chunked-body = *chunk last-chunk trailer-section CRLF
//   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
enum class state : std::uint8_t {
    size_first,      // expecting the first HEXDIG of a chunk-size
    size,            // in chunk-size: HEXDIG, ';', BWS or CR
    size_bws,        // BWS after the size or a value: only more BWS or ';' may follow
    ext_name_start,  // after ';': BWS, then the first tchar of a name
    ext_name,        // in a name: tchar, '=', ';', BWS or CR
    ext_name_bws,    // BWS after a name: '=' or ';' must follow
    ext_value_start, // after '=': BWS, then a token or a quoted-string (quoted_ set)
    ext_value,       // in a value; quoted_ when inside a quoted-string, escaped_ right after a backslash
    ext_value_end,   // after a closing quote: ';', BWS or CR
    size_lf,         // the LF ending the chunk-size line
    data,            // chunk_remaining_ payload bytes still to copy
    data_cr,         // the CR after chunk data
    data_lf,         // the LF after chunk data
    trailer_start,   // start of a trailer field line, or the CR of the final empty line
    trailer_name,    // in a trailer field-name, until ':'
    trailer_value,   // in a trailer field-value, until CR
    trailer_lf,      // the LF ending a trailer field line
    final_lf,        // the LF of the final empty line
    done,            // the body is complete; further calls consume nothing
    failed_400,      // errors stick, so a caller that calls again gets the same answer
    failed_413,
    failed_431,
};

using char_class::hex_bit;
using char_class::is;
using char_class::tchar_bit;
using char_class::value_bit;

inline bool is_bws(unsigned char c) noexcept {
    return c == ' ' || c == '\t';
}

inline std::uint64_t hex_value(unsigned char c) noexcept {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

// A chunk-size of 16 hex digits fills a uint64; a 17th is refused before it could overflow.
constexpr std::size_t max_chunk_size_digits = 16;

} // namespace

void chunked_decoder::reset(std::uint64_t max_body_bytes) noexcept {
    reset();
    max_body_bytes_ = max_body_bytes == 0 ? ~std::uint64_t{0} : max_body_bytes;
}

void chunked_decoder::reset() noexcept {
    max_body_bytes_ = limits_->max_body_bytes;
    state_ = static_cast<std::uint8_t>(state::size_first);
    chunk_remaining_ = 0;
    body_bytes_ = 0;
    digits_ = 0;
    extension_bytes_ = 0;
    trailer_bytes_ = 0;
    quoted_ = false;
    escaped_ = false;
}

chunk_result chunked_decoder::decode(const char* input, std::size_t size, char* out) noexcept {
    const limits& lim = *limits_;
    std::size_t i = 0;
    std::size_t produced = 0;
    auto st = static_cast<state>(state_);

    const auto fail = [&](state failed, http::status code) noexcept {
        state_ = static_cast<std::uint8_t>(failed);
        return chunk_result{chunk_status::error, i, produced, code};
    };
    switch (st) {
    case state::done:
        return {chunk_status::done, 0, 0, status::none};
    case state::failed_400:
        return fail(st, status::bad_request);
    case state::failed_413:
        return fail(st, status::content_too_large);
    case state::failed_431:
        return fail(st, status::request_header_fields_too_large);
    default:
        break;
    }

    while (i < size) {
        if (st == state::data) {
            // Bulk copy. memmove because `out` may alias `input`: out + produced <= input + i always holds, as
            // every produced byte was consumed and framing bytes were consumed without producing.
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_remaining_, size - i));
            std::memmove(out + produced, input + i, n);
            i += n;
            produced += n;
            body_bytes_ += n;
            chunk_remaining_ -= n;
            if (chunk_remaining_ == 0) {
                st = state::data_cr;
            }
            continue;
        }

        const auto c = static_cast<unsigned char>(input[i]);
        // Extension bytes are everything between the size digits and the CR (RFC 9112 §7.1.1 allows a limit).
        const bool in_extension = st >= state::size_bws && st <= state::ext_value_end;
        if ((in_extension || (st == state::size && !is(c, hex_bit))) && c != '\r' &&
            ++extension_bytes_ > lim.max_chunk_extension_bytes) {
            return fail(state::failed_400, status::bad_request);
        }
        // The trailer section counts like a header section, through the final CRLF.
        if (st >= state::trailer_start && st <= state::final_lf && ++trailer_bytes_ > lim.max_header_bytes) {
            return fail(state::failed_431, status::request_header_fields_too_large);
        }

        switch (st) {
        case state::size_first:
        case state::size:
            if (is(c, hex_bit)) {
                if (digits_ == max_chunk_size_digits) {
                    return fail(state::failed_400, status::bad_request);
                }
                ++digits_;
                chunk_remaining_ = chunk_remaining_ * 16 + hex_value(c);
                // The size only grows with more digits: 413 is provable now. body_bytes_ <= max_body_bytes_.
                if (chunk_remaining_ > max_body_bytes_ - body_bytes_) {
                    return fail(state::failed_413, status::content_too_large);
                }
                st = state::size;
            } else if (st == state::size_first) {
                return fail(state::failed_400, status::bad_request);
            } else if (c == ';') {
                st = state::ext_name_start;
            } else if (is_bws(c)) {
                st = state::size_bws;
            } else if (c == '\r') {
                st = state::size_lf;
            } else {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::size_bws:
            if (c == ';') {
                st = state::ext_name_start;
            } else if (!is_bws(c)) {
                return fail(state::failed_400, status::bad_request); // includes BWS then CR: not in the grammar
            }
            break;
        case state::ext_name_start:
            if (is(c, tchar_bit)) {
                st = state::ext_name;
            } else if (!is_bws(c)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::ext_name:
            if (c == '=') {
                st = state::ext_value_start;
            } else if (c == ';') {
                st = state::ext_name_start;
            } else if (is_bws(c)) {
                st = state::ext_name_bws;
            } else if (c == '\r') {
                st = state::size_lf;
            } else if (!is(c, tchar_bit)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::ext_name_bws:
            if (c == '=') {
                st = state::ext_value_start;
            } else if (c == ';') {
                st = state::ext_name_start;
            } else if (!is_bws(c)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::ext_value_start:
            if (is(c, tchar_bit)) {
                st = state::ext_value;
            } else if (c == '"') {
                quoted_ = true;
                st = state::ext_value;
            } else if (!is_bws(c)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::ext_value:
            if (quoted_) {
                // RFC 9110 §5.6.4: qdtext and quoted-pair are field-value bytes other than a bare '"' or '\'.
                if (escaped_) {
                    escaped_ = false;
                    if (!is(c, value_bit)) {
                        return fail(state::failed_400, status::bad_request);
                    }
                } else if (c == '"') {
                    quoted_ = false;
                    st = state::ext_value_end;
                } else if (c == '\\') {
                    escaped_ = true;
                } else if (!is(c, value_bit)) {
                    return fail(state::failed_400, status::bad_request);
                }
            } else if (c == ';') {
                st = state::ext_name_start;
            } else if (is_bws(c)) {
                st = state::size_bws;
            } else if (c == '\r') {
                st = state::size_lf;
            } else if (!is(c, tchar_bit)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::ext_value_end:
            if (c == ';') {
                st = state::ext_name_start;
            } else if (is_bws(c)) {
                st = state::size_bws;
            } else if (c == '\r') {
                st = state::size_lf;
            } else {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::size_lf:
            if (c != '\n') {
                return fail(state::failed_400, status::bad_request);
            }
            st = chunk_remaining_ == 0 ? state::trailer_start : state::data;
            break;
        case state::data_cr:
            if (c != '\r') {
                return fail(state::failed_400, status::bad_request);
            }
            st = state::data_lf;
            break;
        case state::data_lf:
            if (c != '\n') {
                return fail(state::failed_400, status::bad_request);
            }
            digits_ = 0;
            extension_bytes_ = 0;
            st = state::size_first;
            break;
        case state::trailer_start:
            // RFC 9112 §7.1.2: trailer fields use the field-line syntax of §5; obs-fold (a leading SP/HTAB),
            // an empty name and a bare LF all fail here.
            if (c == '\r') {
                st = state::final_lf;
            } else if (is(c, tchar_bit)) {
                st = state::trailer_name;
            } else {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::trailer_name:
            if (c == ':') {
                st = state::trailer_value;
            } else if (!is(c, tchar_bit)) {
                return fail(state::failed_400, status::bad_request); // includes whitespace before the colon
            }
            break;
        case state::trailer_value:
            if (c == '\r') {
                st = state::trailer_lf;
            } else if (!is(c, value_bit)) {
                return fail(state::failed_400, status::bad_request);
            }
            break;
        case state::trailer_lf:
            if (c != '\n') {
                return fail(state::failed_400, status::bad_request);
            }
            st = state::trailer_start;
            break;
        case state::final_lf:
            if (c != '\n') {
                return fail(state::failed_400, status::bad_request);
            }
            state_ = static_cast<std::uint8_t>(state::done);
            return {chunk_status::done, i + 1, produced, status::none};
        case state::data:
        case state::done:
        case state::failed_400:
        case state::failed_413:
        case state::failed_431:
            break; // handled above the switch
        }
        ++i;
    }
    state_ = static_cast<std::uint8_t>(st);
    return {chunk_status::incomplete, i, produced, status::none};
}

} // namespace hotpath::http

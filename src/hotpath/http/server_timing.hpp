// Parser of the Server-Timing response field (W3C Server Timing), shared by `hotpath probe` and the server's tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::http {

// Milliseconds as a double: the unit of the dur parameter (W3C Server Timing §3).
using server_timing_duration = std::chrono::duration<double, std::milli>;

// One metric of a Server-Timing field value, such as `db;dur=53.2;desc="Query \"users\""`. The views point into
// the field value given to parse_server_timing() and stay valid as long as its bytes do.
struct server_timing_metric {
    std::string_view name; // metric-name: a token, case kept as written
    // The first dur parameter: absent when the metric has none; 0 when its value is not a number, is empty or
    // overflows (the spec's processing model: an unparsable dur is 0).
    std::optional<server_timing_duration> duration;
    // The first desc parameter as written: a token, or the content of a quoted-string with its quoted-pairs
    // (`\"`, `\\`) still escaped; empty when absent. description() gives the text itself.
    std::string_view raw_description;

    // raw_description with each quoted-pair replaced by the byte it escapes (RFC 9110 §5.6.4). Allocates.
    std::string description() const;
};

struct server_timing_result {
    std::size_t metrics = 0;        // metrics appended to the output vector
    std::size_t rejected = 0;       // list elements skipped because they do not start with a metric-name
                                    // followed by OWS and ";", "," or the end
    std::size_t ignored_params = 0; // parameters skipped as malformed; their metric is kept
};

// Parses one Server-Timing field value and appends its metrics to `out`, in order; call once per Server-Timing
// field of a response (RFC 9110 §5.3: several fields are one list). The grammar (W3C Server Timing §3):
//
//     Server-Timing             = #server-timing-metric
//     server-timing-metric      = metric-name *( OWS ";" OWS server-timing-param )
//     metric-name               = token
//     server-timing-param       = server-timing-param-name OWS "=" OWS server-timing-param-value
//     server-timing-param-name  = token
//     server-timing-param-value = token / quoted-string
//
// Leniency, as browsers process the field: empty list elements are skipped (RFC 9110 §5.6.1); a parameter
// without "=" has an empty value; parameter names compare case-insensitively and the first dur and first desc
// win; unknown parameters are ignored. Junk never throws or stops the parse: an element that does not start with a
// metric-name is skipped up to the next comma outside a quoted-string (counted in `rejected`), and a malformed
// parameter (no name, an unterminated quoted-string, bytes after its value) up to the next ";" or "," (counted in
// `ignored_params`). A dur value is a decimal number with an optional sign, fraction and exponent (the HTML rules
// for floating-point numbers: trailing bytes after the number are ignored, "inf" and "nan" are not numbers).
// Reads only field_value's bytes; allocates nothing but the growth of `out`.
server_timing_result parse_server_timing(std::string_view field_value, std::vector<server_timing_metric>& out);

} // namespace hotpath::http

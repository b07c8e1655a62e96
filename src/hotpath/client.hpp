// hotpath's client, as an application includes it: pooled calls on the loops (client, its options and responses),
// typed JSON calls, bounded fan-out and cancellation, and the URL type.
#pragma once

#include <hotpath/client/client.hpp>
#include <hotpath/client/json.hpp>
#include <hotpath/client/response.hpp>
#include <hotpath/core/cancel.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/http/url.hpp>

// hotpath's server, as an application includes it: routes and handlers (app, request, response, coroutine tasks),
// the server and its options, JSON bodies, blocking work off the loops, timers, and the reports it serves.
#pragma once

#include <hotpath/core/cancel.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/core/units.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/net/sleep.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/blocking.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/request.hpp>
#include <hotpath/server/response.hpp>
#include <hotpath/server/route_report.hpp>
#include <hotpath/server/server.hpp>
#include <hotpath/server/stall_event.hpp>

// hotpath's load generator, as a program includes it: plans from options or scenario files, the run, its results,
// reports and merges.
#pragma once

#include <hotpath/load/merge.hpp>
#include <hotpath/load/options.hpp>
#include <hotpath/load/plan.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/results.hpp>
#include <hotpath/load/runner.hpp>
#include <hotpath/load/scenario.hpp>

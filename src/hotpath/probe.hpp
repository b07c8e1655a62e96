// hotpath's probe, as a program includes it: one request at a time, phase by phase, and its reports; fetch() for a
// single GET.
#pragma once

#include <hotpath/probe/probe.hpp>
#include <hotpath/probe/report.hpp>

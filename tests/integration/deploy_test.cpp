// The Kubernetes manifests of deploy/k8s as a cluster would take them: rendered by kubectl kustomize (no cluster
// needed), their probes, drain and resources consistent with what `hotpath serve` does, and the load Jobs' own
// command lines run here: N generators paused, released together, their parts merged by the merge Job's script
// into the whole plan with one verdict. Skips, naming it, where kubectl or python3-yaml is missing.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using test::port_from;
using namespace std::chrono_literals;
namespace json = boost::json;

const std::string source = HOTPATH_SOURCE_DIR;

std::pair<int, std::string> sh(const std::string& command) {
    child c("/bin/sh", {"-c", command});
    std::string out = c.rest();
    return {c.wait_exit(60s), std::move(out)};
}

std::string missing_tools() {
    if (sh("command -v kubectl").first != 0) {
        return "kubectl is not installed (Debian's kubernetes-client)";
    }
    if (sh("python3 -c 'import yaml'").first != 0) {
        return "python3-yaml is not installed";
    }
    return {};
}

// `kubectl kustomize deploy/k8s/<which>`, its documents as JSON.
json::array rendered(const std::string& which) {
    const auto [code, out] = sh("kubectl kustomize " + source + "/deploy/k8s/" + which +
                                " 2>/dev/null | python3 -c 'import sys, yaml, json; "
                                "print(json.dumps(list(yaml.safe_load_all(sys.stdin))))'");
    EXPECT_EQ(code, 0) << out;
    return code == 0 ? json::parse(out).as_array() : json::array{};
}

const json::object* find(const json::array& docs, const std::string& kind, const std::string& name) {
    for (const auto& d : docs) {
        const auto& o = d.as_object();
        if (o.at("kind").as_string() == kind && o.at("metadata").at("name").as_string() == name) {
            return &o;
        }
    }
    return nullptr;
}

const json::object& container(const json::object& workload) {
    return workload.at("spec").at("template").at("spec").at("containers").at(0).as_object();
}

std::string env_value(const json::object& c, const std::string& name) {
    for (const auto& e : c.at("env").as_array()) {
        if (e.at("name").as_string() == name && e.as_object().contains("value")) {
            return std::string(e.at("value").as_string());
        }
    }
    return {};
}

// The value of `--name=value` among a container's args, or "".
std::string flag(const json::object& c, const std::string& name) {
    for (const auto& a : c.at("args").as_array()) {
        const std::string arg(a.as_string());
        if (arg.rfind(name + "=", 0) == 0) {
            return arg.substr(name.size() + 1);
        }
    }
    return {};
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(deploy_k8s_test, the_service_is_probed_drained_and_bounded_as_hotpath_serve_does_it) {
    if (const auto m = missing_tools(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const json::array docs = rendered("service");
    const json::object* deployment = find(docs, "Deployment", "hotpath");
    ASSERT_NE(deployment, nullptr);
    ASSERT_NE(find(docs, "Service", "hotpath"), nullptr);
    const json::object& c = container(*deployment);
    EXPECT_EQ(c.at("image").as_string(), "hotpath:latest");
    EXPECT_EQ(c.at("readinessProbe").at("httpGet").at("path").as_string(), "/readyz");
    EXPECT_EQ(c.at("livenessProbe").at("httpGet").at("path").as_string(), "/livez");
    // Ready goes false at once on SIGTERM, for the drain delay; the grace period covers it and the drain.
    const long delay_ms = std::stol(flag(c, "--drain-delay"));
    const long drain_ms = std::stol(flag(c, "--drain-timeout"));
    const long probe_s = c.at("readinessProbe").at("periodSeconds").to_number<long>();
    EXPECT_GT(delay_ms, 2 * probe_s * 1000) << "the probe sees the 503 before the drain";
    const long grace_s =
        deployment->at("spec").at("template").at("spec").at("terminationGracePeriodSeconds").to_number<long>();
    EXPECT_GT(grace_s * 1000, delay_ms + drain_ms);
    // Thread per core: the event loops are the CPUs it is given, requests equal to limits (a Guaranteed pod).
    EXPECT_EQ(flag(c, "--threads"), std::string(c.at("resources").at("limits").at("cpu").as_string()));
    EXPECT_EQ(c.at("resources").at("requests").at("cpu"), c.at("resources").at("limits").at("cpu"));
    EXPECT_EQ(flag(c, "--address"), "0.0.0.0");

    // The probes answer as the manifest expects from the same command line, here.
    std::vector<std::string> args;
    for (const auto& a : c.at("args").as_array()) {
        const std::string arg(a.as_string());
        args.push_back(arg.rfind("--port=", 0) == 0      ? "--port=0"
                       : arg.rfind("--address=", 0) == 0 ? "--address=127.0.0.1"
                                                         : arg);
    }
    child serve(args);
    const std::uint16_t port = port_from(serve.line());
    ASSERT_NE(port, 0);
    const std::string base = "curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(port);
    EXPECT_EQ(sh(base + "/readyz").second, "ready");
    EXPECT_EQ(sh(base + "/livez").second, "live");
    serve.signal(SIGTERM);
    EXPECT_NE(serve.line().find("not ready, still serving for " + std::to_string(delay_ms) + " ms"), std::string::npos);
    EXPECT_NE(sh(base + "/readyz -w ' %{http_code}'").second.find(" 503"), std::string::npos);
    EXPECT_EQ(sh(base + "/livez").second, "live");
    serve.signal(SIGTERM); // a second signal: no need to wait out the delay here
    serve.rest();
    EXPECT_EQ(serve.wait_exit(15s), 0);
}

// The scrape job for Kubernetes pods (deploy/prometheus/kubernetes-job.yml) keeps the Deployment's pods on the port
// its manifest names: Debian's Prometheus has no Kubernetes discovery to check it with, so its labels are checked
// against the manifest here.
TEST(deploy_k8s_test, the_kubernetes_scrape_job_selects_the_deployment_s_pods) {
    if (const auto m = missing_tools(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const auto [code, out] = sh("python3 -c 'import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.stdin)))' < " +
                                source + "/deploy/prometheus/kubernetes-job.yml");
    ASSERT_EQ(code, 0) << out;
    const json::value parsed = json::parse(out);
    const json::object& job = parsed.as_array().at(0).as_object();
    std::string app;
    std::string port;
    for (const auto& r : job.at("relabel_configs").as_array()) {
        const std::string from(r.at("source_labels").at(0).as_string());
        if (from == "__meta_kubernetes_pod_label_app_kubernetes_io_name") {
            app = std::string(r.at("regex").as_string());
        } else if (from == "__meta_kubernetes_pod_container_port_name") {
            port = std::string(r.at("regex").as_string());
        }
    }
    const json::array docs = rendered("service");
    const json::object* deployment = find(docs, "Deployment", "hotpath");
    ASSERT_NE(deployment, nullptr);
    EXPECT_EQ(app, std::string(deployment->at("spec")
                                   .at("template")
                                   .at("metadata")
                                   .at("labels")
                                   .at("app.kubernetes.io/name")
                                   .as_string()));
    EXPECT_EQ(port, std::string(container(*deployment).at("ports").at(0).at("name").as_string()));
}

// The Indexed Job's pods, their command lines as the cluster expands them ($(PART), $(PARTS)), run here against a
// local service: paused until released (as the starter does), each its segment; the merge Job's script merges them
// into the whole plan and judges the thresholds once.
TEST(deploy_k8s_test, the_load_jobs_command_lines_split_the_plan_exactly_and_merge_to_one_verdict) {
    if (const auto m = missing_tools(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const json::array docs = rendered("load");
    const json::object* job = find(docs, "Job", "hotpath-load");
    const json::object* starter = find(docs, "Job", "hotpath-load-start");
    const json::object* merger = find(docs, "Job", "hotpath-load-merge");
    ASSERT_TRUE(job != nullptr && starter != nullptr && merger != nullptr);
    ASSERT_NE(find(docs, "ConfigMap", "hotpath-load-plan"), nullptr);
    ASSERT_NE(find(docs, "PersistentVolumeClaim", "hotpath-load-results"), nullptr);
    ASSERT_NE(find(docs, "Service", "hotpath-load"), nullptr);
    const auto& spec = job->at("spec").as_object();
    EXPECT_EQ(spec.at("completionMode").as_string(), "Indexed");
    EXPECT_EQ(spec.at("backoffLimit").to_number<int>(), 0);
    const json::object& generator = container(*job);
    const std::string parts = env_value(generator, "PARTS");
    ASSERT_FALSE(parts.empty());
    const int n = std::stoi(parts);
    EXPECT_EQ(spec.at("completions").to_number<int>(), n);
    EXPECT_EQ(spec.at("parallelism").to_number<int>(), n);
    EXPECT_EQ(env_value(container(*starter), "PARTS"), parts);
    EXPECT_EQ(env_value(container(*merger), "PARTS"), parts);
    EXPECT_EQ(job->at("spec").at("template").at("spec").at("subdomain").as_string(), "hotpath-load");
    for (const json::object* j : {starter, merger}) {
        const std::string script(container(*j).at("args").at(0).as_string());
        const std::string path = ::testing::TempDir() + "hotpath_deploy_script.sh";
        std::ofstream(path) << script;
        EXPECT_EQ(sh("sh -n " + path).first, 0) << script;
    }

    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const std::uint16_t port = port_from(server.line());
    ASSERT_NE(port, 0);
    const auto results =
        std::filesystem::path(::testing::TempDir()) / ("hotpath_k8s_results_" + std::to_string(::getpid()));
    std::filesystem::create_directories(results);

    // Pod I's arguments: the cluster's expansion, then the paths and addresses of this machine, and a short plan
    // (the file's rate for 2 s instead of 5 min; a bound the whole passes and a third alone would not).
    std::vector<std::unique_ptr<child>> pods;
    std::vector<std::uint16_t> controls;
    for (int i = 0; i < n; ++i) {
        std::vector<std::string> args;
        for (const auto& a : generator.at("args").as_array()) {
            std::string arg(a.as_string());
            arg = std::regex_replace(arg, std::regex(R"(\$\(PART\))"), std::to_string(i));
            arg = std::regex_replace(arg, std::regex(R"(\$\(PARTS\))"), parts);
            arg =
                std::regex_replace(arg, std::regex("^--scenario=/plan/"), "--scenario=" + source + "/deploy/k8s/load/");
            arg = std::regex_replace(arg, std::regex("^--json=/results/"), "--json=" + results.string() + "/");
            arg = std::regex_replace(arg, std::regex("^--control=0.0.0.0:6565$"), "--control=127.0.0.1:0");
            args.push_back(arg);
        }
        args.insert(args.begin() + 1, "http://127.0.0.1:" + std::to_string(port));
        for (const char* more : {"-R", "1500", "-d", "2s", "--warmup", "0s", "-c", "6", "-t", "1", "--threshold",
                                 "rps>1200", "--threshold", "errors<1%"}) {
            args.emplace_back(more);
        }
        pods.push_back(std::make_unique<child>(args));
        const std::string line = pods.back()->line();
        controls.push_back(port_from(line));
        ASSERT_NE(controls.back(), 0) << line;
        EXPECT_NE(pods.back()->line().find("paused until"), std::string::npos);
    }
    // The starter's part: every one paused, then all released.
    for (const auto control : controls) {
        EXPECT_NE(
            sh("curl -sS http://127.0.0.1:" + std::to_string(control) + "/status").second.find(R"("paused":true)"),
            std::string::npos);
    }
    for (const auto control : controls) {
        sh("curl -sS -X POST http://127.0.0.1:" + std::to_string(control) + "/start &");
    }
    for (auto& pod : pods) {
        const std::string out = pod->rest();
        EXPECT_EQ(pod->wait_exit(30s), 0) << out;
    }
    // The merge Job's script, its /results here and hotpath on its PATH.
    std::string script(container(*merger).at("args").at(0).as_string());
    script = std::regex_replace(script, std::regex("/results"), results.string());
    const std::string bin = std::filesystem::path(HOTPATH_BINARY).parent_path().string();
    const std::string path = results.string() + "/merge.sh";
    std::ofstream(path) << script;
    const auto [code, report] = sh("PARTS=" + parts + " PATH=" + bin + ":$PATH sh " + path);
    EXPECT_EQ(code, 0) << report;
    const auto merged = json::parse(read_all(results.string() + "/merged.json")).as_object();
    EXPECT_FALSE(merged.at("run").as_object().contains("segment")) << "the parts make the whole plan";
    EXPECT_EQ(merged.at("responses").to_number<std::uint64_t>(), 3000u) << report; // 1,500/s for 2 s, one for one
    EXPECT_LT(merged.at("run").at("start_spread_ns").to_number<std::int64_t>(), 100'000'000) << report;
    EXPECT_NE(report.find("rps>1200"), std::string::npos) << report;
    server.signal(SIGTERM);
    server.wait_exit();
    std::filesystem::remove_all(results);
}

} // namespace
} // namespace hotpath

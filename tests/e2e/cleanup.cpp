// Removes the directories a test process made once all its test cases have passed. A whole run
// leaves a tracer of about 5 MB behind for every traced case, 7 GB in all, and that once filled a
// CI machine's disk halfway through the suite. A failing process keeps its directories for the
// post-mortem, and WEAVE_KEEP_TMP=1 keeps everything. Linked into the doctest test programs only:
// the arm64-vm command shares the harness without doctest.
#include "harness.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

struct RemoveTempDirsOnSuccess : doctest::IReporter {
  explicit RemoveTempDirsOnSuccess(const doctest::ContextOptions &) {}
  void report_query(const doctest::QueryData &) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats &stats) override {
    const char *keep = std::getenv("WEAVE_KEEP_TMP");
    bool keep_all = keep && *keep && std::string(keep) != "0";
    if (keep_all || stats.numTestCasesFailed != 0 || stats.numAssertsFailed != 0)
      return;
    for (const auto &dir : e2e::temp_dirs_made()) {
      std::error_code ec; // one a test removed itself, or one still in use, is left alone
      std::filesystem::remove_all(dir, ec);
    }
  }
  void test_case_start(const doctest::TestCaseData &) override {}
  void test_case_reenter(const doctest::TestCaseData &) override {}
  void test_case_end(const doctest::CurrentTestCaseStats &) override {}
  void test_case_exception(const doctest::TestCaseException &) override {}
  void subcase_start(const doctest::SubcaseSignature &) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData &) override {}
  void log_message(const doctest::MessageData &) override {}
  void test_case_skipped(const doctest::TestCaseData &) override {}
};

} // namespace

DOCTEST_REGISTER_LISTENER("remove-temp-dirs-on-success", 1, RemoveTempDirsOnSuccess);

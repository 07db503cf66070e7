// The hang engine's findings in words (wait_graph.h): operations, the ends of the chains and
// the chains themselves, e.g. "rank 13 waits in recv from rank 5 (process group 2 (pp)),
// which waits in all-to-all seq 7 of process group 4 (ep) for ranks 9 and 14, each of which
// entered nothing after all-to-all seq 6 of process group 4 (ep) for at least 3.2 min".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/wait_graph.h"

namespace rs::analyzer::wait {

// "rank 2", "ranks 9 and 14", "ranks 0-63" (runs where there are many).
std::string RanksPhrase(const std::vector<int64_t>& sorted);

// Rule 12: "rank 2 went on after its record was taken (...)", "ranks 4 and 7 went on after
// their records were taken (...)".
std::string WentOnPhrase(const std::vector<int64_t>& sorted);

// "all-reduce seq 50 of process group 0 (default_pg)", "recv from rank 5 (process group 2)".
std::string OpPhrase(const Input& in, const Op& o);

// What an end of a chain shows, without its subject: "entered nothing after ... for at least
// 3 min", "wrote no dump: its state is unknown".
std::string EndPhrase(const Input& in, const Result& r, const End& e);

// One line per distinct chain, at most max_lines (a last line says how many more).
std::vector<std::string> Chains(const Input& in, const Result& r, size_t max_lines);

// Why the verdict is none, undetermined or stuck in an operation; '' for the others.
std::string Reason(const Input& in, const Result& r);

}  // namespace rs::analyzer::wait

// `rankscope-fleet query`: one read-only SQL statement on every node at once, their rows as
// one table (table, CSV or JSON, printed as `rankscope-analyze query` prints) with a leading
// `node` column. A node that fails (down, too slow, refused by TLS, the query refused) is a
// warning naming it and why; the others' rows are kept.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/fleet/fan_out.h"
#include "analyzer/fleet/node_list.h"
#include "analyzer/query.h"
#include "rscore/fleet_wire.h"
#include "rscore/result.h"
#include "rscore/wire_clock.h"

namespace rs::fleet {

inline constexpr int kClockExchanges = 5;

struct FleetQuery {
  std::vector<NodeAddress> nodes;
  ClientAuth auth;
  FanOutOptions fan;
  rs::wire::QueryRequest request;
  rs::analyzer::OutputFormat format = rs::analyzer::OutputFormat::kTable;
};

struct NodeAnswer {
  std::string name;  // the node column's value
  NodeAddress address;
  rs::Result<void> status = rs::Ok();
  rs::WireClock clock;
  rs::wire::QueryReply reply;
};

struct FleetQueryResult {
  std::vector<NodeAnswer> answers;    // every node, in natural order of their names
  std::vector<std::string> warnings;  // one per node that failed or was cut short
  int answered = 0;                   // nodes whose rows are in the table
  int64_t rows = 0;
};

// Asks every node (clock, then the query) and prints the table to `out` (nothing when no node
// answered: `answered` is 0 and every node has its warning). An error: the output failed.
rs::Result<FleetQueryResult> RunFleetQuery(const FleetQuery& q, std::ostream& out);

// Every node's answers as one table: the rows of `answers` (those with status ok) in an
// in-memory SQLite table printed by rs::analyzer::RunQuery, so that cells look exactly as
// `rankscope-analyze query` prints them. Nodes whose columns differ from the first answer's
// are left out with a warning.
rs::Result<int64_t> PrintCombined(std::vector<NodeAnswer>& answers,
                                  rs::analyzer::OutputFormat format, std::ostream& out,
                                  std::vector<std::string>& warnings);

// The clocks as an aligned table, for --show-clock (standard error).
std::string FormatClocks(const std::vector<NodeAnswer>& answers);

}  // namespace rs::fleet

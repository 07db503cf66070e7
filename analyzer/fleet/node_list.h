// The nodes rankscope-fleet talks to (--nodes): a file with one node a line, or a host list
// on the command line.
//
//   file:      # comments and blank lines are skipped
//              node1 10.0.0.1:7443        NAME ADDRESS[:PORT]
//              10.0.0.2                   ADDRESS[:PORT] (named by what the node answers)
//   host list: node[1-4]:7443,gpu-a.lab,[fd00::5]:7443,10.0.0.[10-12]
//              brackets expand a range of numbers (node[01-16] keeps the zeros)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"

namespace rs::fleet {

inline constexpr int kDefaultPort = 7443;

struct NodeAddress {
  std::string name;  // as the user named it; empty: the node's own answer names it
  std::string host;  // DNS name or address (IPv6 without brackets)
  int port = kDefaultPort;
  // "host:port" ("[v6]:port"), for messages.
  std::string address() const;
  // The name for messages before the node has answered: the name, else the address.
  std::string label() const { return name.empty() ? address() : name; }
  // "node3 (10.0.0.3:7443)", or the address alone: who a warning is about.
  std::string who(const std::string& answered = "") const {
    const std::string n = !name.empty() ? name : answered;
    return n.empty() || n == address() ? address() : n + " (" + address() + ")";
  }
};

// `spec` names a file when one exists at that path, else it is a host list. Errors name the
// file and line, or the list item. Duplicate addresses are an error.
rs::Result<std::vector<NodeAddress>> ParseNodes(const std::string& spec);

// The parts, for tests.
rs::Result<std::vector<NodeAddress>> ParseHostList(std::string_view list);
rs::Result<std::vector<NodeAddress>> ParseNodeFile(std::string_view text, const std::string& path);
rs::Result<NodeAddress> ParseAddress(std::string_view text);

}  // namespace rs::fleet

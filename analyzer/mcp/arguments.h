// A tool's arguments, declared once: the declaration gives the tool's inputSchema (JSON Schema)
// and checks what a client sends, with errors an assistant can act on ("argument 'seq' must be
// an integer, got the string \"12\"").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/mcp/json_rpc.h"
#include "rscore/result.h"

namespace rs::analyzer::mcp {

struct Param {
  enum class Type {
    kString,
    kInteger,
    kBoolean,
    kStringList,       // an array of strings
    kStringOrInteger,  // a time in ns or a hash in decimal may come as either
  };
  Param(std::string n, Type t, std::string d)
      : name(std::move(n)), type(t), description(std::move(d)) {}
  Param& Required() {
    required = true;
    return *this;
  }
  Param& Range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    minimum = lo;
    maximum = hi;
    return *this;
  }
  Param& Choices(std::vector<std::string> values) {
    choices = std::move(values);
    return *this;
  }

  std::string name;
  Type type = Type::kString;
  std::string description;
  bool required = false;
  std::optional<int64_t> minimum, maximum;  // kInteger
  std::vector<std::string> choices;         // kString, kStringList: the values allowed
};

// {"type": "object", "properties": ..., "required": [...], "additionalProperties": false}
Json InputSchema(const std::vector<Param>& params);

// Arguments checked against their declaration.
class Args {
 public:
  // `arguments` is the request's (null when absent: no arguments). Errors name the tool and the
  // argument, and what is expected.
  static rs::Result<Args> Check(const std::string& tool, const std::vector<Param>& params,
                                const Json& arguments);
  bool Has(const std::string& name) const { return values_.contains(name); }
  std::optional<std::string> String(const std::string& name) const;
  std::optional<int64_t> Int(const std::string& name) const;
  bool Bool(const std::string& name, bool otherwise) const;
  std::vector<std::string> Strings(const std::string& name) const;
  // A kStringOrInteger argument as text ("0x..", "+40s", or the integer's digits).
  std::optional<std::string> Text(const std::string& name) const;

 private:
  Json values_ = Json::object();
};

}  // namespace rs::analyzer::mcp

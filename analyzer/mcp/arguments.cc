#include "analyzer/mcp/arguments.h"

#include <cmath>

namespace rs::analyzer::mcp {
namespace {

const char* TypeName(Param::Type t) {
  switch (t) {
    case Param::Type::kString:
      return "a string";
    case Param::Type::kInteger:
      return "an integer";
    case Param::Type::kBoolean:
      return "true or false";
    case Param::Type::kStringList:
      return "an array of strings";
    case Param::Type::kStringOrInteger:
      return "a string or an integer";
  }
  return "";
}

// What a client sent, for an error: `the string "12"`, `the number 1.5`, `an object`.
std::string Described(const Json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return "the string " + Dump(Json(s));
  }
  if (v.is_number()) return "the number " + Dump(v);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return "null";
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// An integer as JSON Schema counts one: a number without a fraction (3 or 3.0), in int64.
std::optional<int64_t> AsInteger(const Json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return std::nullopt;
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

rs::Result<Json> CheckValue(const std::string& tool, const Param& p, const Json& v) {
  const std::string what = "tool " + tool + ": argument '" + p.name + "' must be ";
  auto wrong = [&]() { return rs::Error(what + TypeName(p.type) + ", got " + Described(v)); };
  auto choice = [&](const std::string& s) -> rs::Result<void> {
    if (p.choices.empty()) return rs::Ok();
    for (const auto& c : p.choices) {
      if (c == s) return rs::Ok();
    }
    return rs::Error(what + "one of " + Join(p.choices) + ", got " + Described(Json(s)));
  };
  switch (p.type) {
    case Param::Type::kString:
      if (!v.is_string()) return wrong();
      RETURN_IF_ERROR(choice(v.get<std::string>()));
      return v;
    case Param::Type::kBoolean:
      if (!v.is_boolean()) return wrong();
      return v;
    case Param::Type::kInteger: {
      const std::optional<int64_t> i = AsInteger(v);
      if (!i) return wrong();
      if ((p.minimum && *i < *p.minimum) || (p.maximum && *i > *p.maximum)) {
        return rs::Error(what + "an integer from " + std::to_string(p.minimum.value_or(INT64_MIN)) +
                         " to " + std::to_string(p.maximum.value_or(INT64_MAX)) + ", got " +
                         std::to_string(*i));
      }
      return Json(*i);
    }
    case Param::Type::kStringOrInteger: {
      if (v.is_string()) return v;
      const std::optional<int64_t> i = AsInteger(v);
      if (!i) return wrong();
      return Json(*i);
    }
    case Param::Type::kStringList: {
      if (!v.is_array()) return wrong();
      for (const Json& item : v) {
        if (!item.is_string()) return wrong();
        RETURN_IF_ERROR(choice(item.get<std::string>()));
      }
      return v;
    }
  }
  return wrong();
}

}  // namespace

Json InputSchema(const std::vector<Param>& params) {
  Json properties = Json::object();
  Json required = Json::array();
  for (const Param& p : params) {
    Json s;
    switch (p.type) {
      case Param::Type::kString:
        s["type"] = "string";
        break;
      case Param::Type::kInteger:
        s["type"] = "integer";
        if (p.minimum) s["minimum"] = *p.minimum;
        if (p.maximum) s["maximum"] = *p.maximum;
        break;
      case Param::Type::kBoolean:
        s["type"] = "boolean";
        break;
      case Param::Type::kStringList:
        s["type"] = "array";
        s["items"] = {{"type", "string"}};
        break;
      case Param::Type::kStringOrInteger:
        s["type"] = {"string", "integer"};
        break;
    }
    if (!p.choices.empty()) {
      Json& target = p.type == Param::Type::kStringList ? s["items"] : s;
      target["enum"] = p.choices;
    }
    s["description"] = p.description;
    properties[p.name] = std::move(s);
    if (p.required) required.push_back(p.name);
  }
  Json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

rs::Result<Args> Args::Check(const std::string& tool, const std::vector<Param>& params,
                             const Json& arguments) {
  Args args;
  if (arguments.is_null()) {
    // No arguments: fine unless one is required (below).
  } else if (!arguments.is_object()) {
    return rs::Error("tool " + tool + ": \"arguments\" must be an object, got " +
                     Described(arguments));
  } else {
    for (const auto& [name, value] : arguments.items()) {
      const Param* p = nullptr;
      for (const Param& q : params) {
        if (q.name == name) p = &q;
      }
      if (p == nullptr) {
        std::vector<std::string> names;
        for (const Param& q : params) names.push_back(q.name);
        return rs::Error(
            "tool " + tool + ": unknown argument '" + name + "' (" +
            (names.empty() ? std::string("it takes no arguments") : "it takes: " + Join(names)) +
            ")");
      }
      ASSIGN_OR_RETURN(Json checked, CheckValue(tool, *p, value));
      args.values_[name] = std::move(checked);
    }
  }
  for (const Param& p : params) {
    if (p.required && !args.Has(p.name)) {
      return rs::Error("tool " + tool + ": argument '" + p.name + "' is required (" +
                       p.description + ")");
    }
  }
  return args;
}

std::optional<std::string> Args::String(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<int64_t> Args::Int(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

bool Args::Bool(const std::string& name, bool otherwise) const {
  auto it = values_.find(name);
  return it == values_.end() || !it->is_boolean() ? otherwise : it->get<bool>();
}

std::vector<std::string> Args::Strings(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || !it->is_array()) return {};
  return it->get<std::vector<std::string>>();
}

std::optional<std::string> Args::Text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return std::nullopt;
}

}  // namespace rs::analyzer::mcp

#include "common/cli/flag_table.h"

#include <utility>

namespace rrs {

namespace {

constexpr size_t kWidth = 80;       // the help's right margin
constexpr size_t kTextColumn = 26;  // where a flag's text starts

// "-h, --help" -> {"-h", "--help"}.
std::vector<std::string_view> names_of(std::string_view name) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = name.find(", ");
    out.push_back(name.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    name.remove_prefix(comma + 2);
  }
}

// Consumes the current argument if it is `f` (by any of its names).
bool take(ArgReader& args, const Flag& f) {
  for (std::string_view name : names_of(f.name)) {
    if (*f.value == '\0') {
      if (!args.flag(name)) continue;
      f.set(args, name, "");
      return true;
    }
    std::string v;
    if (!args.option(name, v)) continue;
    if (args.error().empty()) f.set(args, name, v);  // else: "needs a value"
    return true;
  }
  return false;
}

bool hidden(const Flag& f) { return *f.brief == '\0'; }
bool documented_only(const Flag& f) { return !f.set; }

std::string head_of(const Flag& f) {
  std::string head = f.name;
  if (*f.value != '\0') head += std::string(" ") + f.value;
  return head;
}

// "  --flag VALUE" padded to the text column; a longer head gets a line of
// its own.
std::string head_line(const Flag& f) {
  std::string line = "  " + head_of(f);
  if (line.size() + 1 > kTextColumn) return line + "\n" + std::string(kTextColumn, ' ');
  return line + std::string(kTextColumn - line.size(), ' ');
}

// The markdown brief as plain text: no backticks, a link "[text](url)" as
// its text.
std::string plain(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`' || text[i] == '[') continue;
    if (text[i] == ']' && i + 1 < text.size() && text[i + 1] == '(') {
      i = text.find(')', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    out += text[i];
  }
  return out;
}

// The short --help's line for a brief: its plain text up to the first "; "
// outside parentheses, without the parentheses that only point at a page
// of docs/ ("(operations.md)") or at the text above the table: the help has
// neither.
std::string one_line(std::string_view brief) {
  const std::string text = plain(brief);
  std::string out;
  int depth = 0;
  size_t group = std::string::npos;  // where the open top-level " (" began
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (depth == 0 && c == ';' && i + 1 < text.size() && text[i + 1] == ' ') break;
    if (c == '(' && depth++ == 0) group = out.size();
    out += c;
    if (c == ')' && depth > 0 && --depth == 0 && group != std::string::npos) {
      const std::string inside = out.substr(group + 1, out.size() - group - 2);
      if (inside == "above" || inside.ends_with(".md") ||
          inside.find(".md#") != std::string::npos) {
        out.erase(group);
        while (!out.empty() && out.back() == ' ') out.pop_back();
      }
    }
  }
  return out;
}

// `text` wrapped into the text column, after the head line's start.
std::string wrap(const std::string& head, const std::string& text) {
  std::string out = head, line;
  size_t used = kTextColumn;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && used + line.size() + 1 + word.size() > kWidth) {
      out += line + "\n" + std::string(kTextColumn, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line + "\n";
}

// --help-all's entry: the head, then each line of `more` in the text column.
std::string long_entry(const Flag& f) {
  std::string out = head_line(f);
  std::string_view more = *f.more != '\0' ? f.more : f.brief;
  bool first = true;
  while (!more.empty()) {
    size_t nl = more.find('\n');
    if (!first) out += std::string(kTextColumn, ' ');
    out += more.substr(0, nl);
    out += '\n';
    first = false;
    if (nl == std::string_view::npos) break;
    more.remove_prefix(nl + 1);
  }
  return out;
}

// A markdown table cell: '|' escaped.
std::string cell(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string markdown_row(const Flag& f) {
  std::string flag;
  const std::vector<std::string_view> names = names_of(f.name);
  for (size_t i = 0; i < names.size(); ++i) {
    std::string code(names[i]);
    if (i + 1 == names.size() && *f.value != '\0') code += std::string(" ") + f.value;
    flag += (i ? ", `" : "`") + cell(code) + "`";
  }
  std::string def = *f.def != '\0'   ? cell(f.def)
                    : *f.env != '\0' ? "`$" + std::string(f.env) + "`"
                                     : "";
  return "| " + flag + " | " + def + (def.empty() ? "| " : " | ") + cell(f.brief) + " |\n";
}

}  // namespace

std::string parse_flags(int argc, char** argv, const std::vector<Flag>& flags,
                        std::vector<std::string>* positional) {
  ArgReader args(argc, argv);
  while (!args.done() && args.error().empty()) {
    bool matched = false;
    for (const Flag& f : flags)
      if (!documented_only(f) && (matched = take(args, f))) break;
    if (matched) continue;
    if (positional && !args.is_flag())
      positional->push_back(args.positional());
    else
      args.unknown();
  }
  return args.error();
}

std::string render_help(HelpKind kind, const HelpText& text, const std::vector<Flag>& flags) {
  const std::string program = text.program;
  std::string out;
  if (kind == HelpKind::kMarkdown) {
    out = "| flag | default | what it does |\n|---|---|---|\n";
    for (const Flag& f : flags)
      if (!hidden(f)) out += markdown_row(f);
    return out;
  }
  out = std::string(text.usage) + "\n";
  if (kind == HelpKind::kShort) {
    out += std::string(text.summary) + "\n\nCommon options (every flag: " + program +
           " --help-all, or man " + program + "):\n";
    for (const Flag& f : flags) {
      if (hidden(f) || documented_only(f) || !f.common) continue;
      // One line each (the rest is in --help-all).
      std::string brief = one_line(f.brief);
      if (*f.def != '\0') brief += std::string(" (default ") + f.def + ")";
      out += wrap(head_line(f), brief);
    }
    return out;
  }
  out += std::string(text.intro) + "\n\nOptions:\n";
  for (const Flag& f : flags)
    if (!hidden(f) && !documented_only(f)) out += long_entry(f);
  return out + "\n" + text.outro;
}

FlagSetter set_true(bool& out) {
  return [&out](ArgReader&, std::string_view, const std::string&) { out = true; };
}
FlagSetter set_string(std::string& out) {
  return [&out](ArgReader&, std::string_view, const std::string& v) { out = v; };
}

namespace {
// A setter from a parser returning Result<T>, failing as ArgReader's typed
// options do: "NAME: REASON".
template <typename Parse, typename Store>
FlagSetter typed(Parse parse, Store store) {
  return [parse, store](ArgReader& args, std::string_view name, const std::string& v) {
    auto r = parse(name, v);
    if (r.ok())
      store(*r);
    else
      args.fail(std::string(name) + ": " + r.status().reason());
  };
}
}  // namespace

FlagSetter set_endpoint(Endpoint& out) {
  return typed([](std::string_view, std::string_view v) { return parse_endpoint(v); },
               [&out](const Endpoint& e) { out = e; });
}
FlagSetter set_port(uint16_t& out) {
  return typed([](std::string_view, std::string_view v) { return parse_port(v); },
               [&out](uint16_t p) { out = p; });
}
FlagSetter set_number_u64(uint64_t lo, uint64_t hi, std::function<void(uint64_t)> out) {
  return typed([lo, hi](std::string_view name,
                        std::string_view v) { return parse_uint(name, v, lo, hi); },
               std::move(out));
}
FlagSetter set_size_u64(uint64_t lo, uint64_t hi, std::function<void(uint64_t)> out) {
  return typed([lo, hi](std::string_view name,
                        std::string_view v) { return parse_size(name, v, lo, hi); },
               std::move(out));
}
FlagSetter set_help(HelpKind& out, HelpKind kind) {
  return [&out, kind](ArgReader&, std::string_view, const std::string&) { out = kind; };
}

}  // namespace rrs

#include "common/cli/huge_pages_flag.h"

#include <string>

namespace rrs {

bool huge_pages_option(ArgReader& args, HugePages& out) {
  std::string v;
  if (!args.option("--huge-pages", v)) return false;
  auto choice = parse_huge_pages(v);
  if (choice.ok())
    out = *choice;
  else
    args.fail(choice.status().message());
  return true;
}

}  // namespace rrs

// --huge-pages auto|on|off, which both programs take the same way.
#pragma once

#include "common/cli/args.h"
#include "common/table/huge_pages.h"

namespace rrs {

// If the current argument is --huge-pages: its value into `out` (a bad one
// fails `args`), and true.
bool huge_pages_option(ArgReader& args, HugePages& out);

}  // namespace rrs

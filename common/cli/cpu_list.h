// --cpu LIST for both programs: keep the process on chosen CPUs, off the
// core its Redis runs on. A client and the target it loads fight for one
// core and its caches when the scheduler puts them together (1 GB over TCP,
// replica mode, 2 cores: 2.9-3.5 s on separate cores, 4.8-5.0 s on one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace rrs {

// "1", "0,2", "2-5,8": CPU numbers, ascending, without repeats. kUsage on
// anything else, or a CPU number past what Linux can address.
Result<std::vector<int>> parse_cpu_list(std::string_view flag, std::string_view text);

// Binds the calling thread, and every thread it starts afterwards, to `cpus`
// (sched_setaffinity), and says so; nothing when `cpus` is empty. Call before
// starting any thread. kUsage when none of them is allowed here (cgroup,
// taskset), naming the CPUs that are.
Status pin_to_cpus(const std::vector<int>& cpus);

// "0,2": the list as given to --cpu.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace rrs

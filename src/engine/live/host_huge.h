// The huge-page settings a live run needs on the host: the hugetlb pool of every size the
// scenario's machine has, and the THP policies of the profile the sim runs. They are set
// for the run only, journalled first (host_state.h), and put back when the run ends, is
// interrupted or, after a SIGKILL, by the next live run or `vmlab cleanup`.
//
// The pools grow by the scenario's nr_hugepages on top of what the host already has (its
// own users keep theirs). A host that cannot give them all (free memory too fragmented
// for 2 MiB or 1 GiB runs) is refused with the figures, and the pool put back at once.
#pragma once

#include <string>
#include <vector>

#include "engine/live/host_state.h"
#include "engine/live/procfs.h"
#include "model/profile.h"
#include "vmlab/op.h"
#include "vmlab/run_result.h"
#include "vmlab/status.h"

namespace vmlab::live {

// The sysfs directory of the hstate of `size` ("/sys/kernel/mm/hugepages/hugepages-2048kB").
std::string hstate_dir(bytes size);

// Sets what the run needs; notes say what was changed. not_supported when the host has
// no such huge pages or cannot allocate the pool.
status apply_huge_settings(const kernel_profile& p, const machine_decl& m, host_settings& hs, proc_source& src,
                           std::vector<note>& notes);

}  // namespace vmlab::live

#include "model/phys.h"

namespace vmlab {

uint32_t phys::share_anon() {
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(mapcount_.size());
    mapcount_.push_back(0);
  }
  mapcount_[id] = 1;
  return id;
}

void phys::put_anon(uint32_t id) {
  if (--mapcount_[id] == 0) {
    free_ids_.push_back(id);
    --anon_pages;
  }
}

}  // namespace vmlab

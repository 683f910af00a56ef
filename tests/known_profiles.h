// The preset profile names as error messages list them: the list grows with every
// profile, so tests of those messages build it rather than repeat it.
#pragma once

#include <string>

#include "model/profile.h"

inline std::string known_profiles() {
  std::string out;
  for (const std::string& n : vmlab::profile_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Python string formatting used by templates: "%s" % x and "{}".format(x).
#pragma once

#include <string>

#include "template/jinja/value.h"

namespace ferrum::jinja {

// Python str % args (printf-style): %s %r %d %i %x %o %f %e %g %c %%, flags, width, precision,
// %(name)s with a dict argument.
std::string percent_format(const std::string& fmt, const Value& args);
// Python str.format: {} {0} {name}, !r/!s, and [[fill]align][sign][0][width][.precision][type].
std::string str_format(const std::string& fmt, const CallArgs& args);

}  // namespace ferrum::jinja

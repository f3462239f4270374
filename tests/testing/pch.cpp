// testing/pch.cpp — the one source of the targets that build the tests' precompiled
// headers (tests/CMakeLists.txt); the test binaries reuse those headers, not this file.

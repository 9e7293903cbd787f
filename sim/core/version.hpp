#pragma once
namespace dtsim {
inline constexpr const char* kVersion = "0.1.0";
}

// model/weight_type.cpp — weight types and the --dtype choice (see weight_type.h).
#include "model/weight_type.h"

#include <string>

namespace headlab::model {

std::string_view weight_type_name(WeightType t) {
  switch (t) {
    case WeightType::f32: return "f32";
    case WeightType::bf16: return "bf16";
    case WeightType::f16: return "f16";
  }
  return "?";
}

int weight_type_size(WeightType t) { return t == WeightType::f32 ? 4 : 2; }

Result<DtypeChoice> dtype_choice_parse(std::string_view text) {
  if (text == "auto") return DtypeChoice::keep;
  if (text == "f32") return DtypeChoice::f32;
  if (text == "bf16") return DtypeChoice::bf16;
  if (text == "f16") return DtypeChoice::f16;
  return make_error(ErrorCode::invalid_argument,
                    "--dtype: \"" + std::string(text) + "\" is not one of " + std::string(kDtypeChoices) +
                        " (auto keeps the checkpoint's type; f32 widens; bf16 and f16 round the matrices)");
}

std::string_view dtype_choice_name(DtypeChoice choice) {
  switch (choice) {
    case DtypeChoice::keep: return "auto";
    case DtypeChoice::f32: return "f32";
    case DtypeChoice::bf16: return "bf16";
    case DtypeChoice::f16: return "f16";
  }
  return "?";
}

Result<ComputeChoice> compute_choice_parse(std::string_view text) {
  if (text == "f32") return ComputeChoice::f32;
  if (text == "bf16") return ComputeChoice::bf16;
  return make_error(ErrorCode::invalid_argument,
                    "--compute: \"" + std::string(text) + "\" is not one of " + std::string(kComputeChoices) +
                        " (f32 multiplies the inputs as they are; bf16 rounds them to bfloat16 for the products "
                        "with bf16 matrices)");
}

std::string_view compute_choice_name(ComputeChoice choice) { return choice == ComputeChoice::bf16 ? "bf16" : "f32"; }

WeightType weight_type_for(DtypeChoice choice, Dtype file_type) {
  switch (choice) {
    case DtypeChoice::f32: return WeightType::f32;
    case DtypeChoice::bf16: return WeightType::bf16;
    case DtypeChoice::f16: return WeightType::f16;
    case DtypeChoice::keep: break;
  }
  if (file_type == Dtype::BF16) return WeightType::bf16;
  if (file_type == Dtype::F16) return WeightType::f16;
  return WeightType::f32;
}

bool weight_type_rounds(WeightType t, Dtype file_type) {
  switch (t) {
    case WeightType::f32: return file_type == Dtype::F64;
    case WeightType::bf16: return file_type != Dtype::BF16;
    case WeightType::f16: return file_type != Dtype::F16;
  }
  return true;
}

std::uint16_t weight_to_f16(float x) { return f32_to_f16(x); }
float weight_from_f16(std::uint16_t h) { return f16_to_f32(h); }

}  // namespace headlab::model

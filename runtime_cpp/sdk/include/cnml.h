// CNML subset used by Paleozoic (Cambricon Neuware machine-learning library, G3 names).
//
// Names, parameter order and enum values follow the public cnml.h of CNML 7.2/7.3
// (docs: cnml-subset.md). Only the calls Paleozoic emits are declared. The CPU mock
// (runtime_cpp/sdk, backends/reference) implements them with FLOAT32, FLOAT16 and (conv/mlp
// filters) INT8 data, emulating the fp16/int8 arithmetic bit for bit as
// runtime_cpp/sdk/kernels/numerics.h states; its own rules are marked "Mock rule".
//
// The declarations are in one header per area, included here: cnml.h is what callers include.
#ifndef PALEOZOIC_SDK_CNML_H_
#define PALEOZOIC_SDK_CNML_H_

#include "cnml_types.h"    // statuses, enums, handles
#include "cnml_tensors.h"  // setup, tensors, quantisation, operator parameters
#include "cnml_ops.h"      // base op creation and compile
#include "cnml_forward.h"  // base op forwards
#include "cnml_fusion.h"   // fusion ops

#endif  // PALEOZOIC_SDK_CNML_H_

// Paleozoic runtime wrapper: the thin layer between emitted sessions and the CNML SDK.
//
// Lifecycle of a layer (ncnn style): construct (shapes, SDK descriptors, base op)
// -> configLayer (bind weights) -> compileOp(mp) or FusionLayer::fuseLayer + compileFusionOp
// -> run. Every SDK status other than success becomes a pz::SdkError naming the layer.
// One header per part of the wrapper; this one includes them all, so emitted sessions and
// users include <paleozoic/runtime.h> alone.
#ifndef PALEOZOIC_RUNTIME_H_
#define PALEOZOIC_RUNTIME_H_

#include "paleozoic/core.h"
#include "paleozoic/enums.h"
#include "paleozoic/fusion.h"
#include "paleozoic/layers_conv.h"
#include "paleozoic/layers_dense.h"
#include "paleozoic/layers_elementwise.h"
#include "paleozoic/layers_host.h"
#include "paleozoic/layers_image.h"
#include "paleozoic/layers_layout.h"
#include "paleozoic/layers_normalize.h"
#include "paleozoic/layers_pool.h"
#include "paleozoic/layers_recurrent.h"
#include "paleozoic/layers_reduce.h"
#include "paleozoic/run_context.h"
#include "paleozoic/stage.h"
#include "paleozoic/weight_file.h"

#endif  // PALEOZOIC_RUNTIME_H_

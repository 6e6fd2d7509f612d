// TEMPORARY link stub until the mock's precision surface lands. Not committed.
#include <cnml.h>
#include <cnrt.h>
extern "C" {
cnmlStatus_t cnmlCreateQuantizedParam(cnmlQuantizedParam_t*, int, float, float) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlDestroyQuantizedParam(cnmlQuantizedParam_t*) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlSetOperationComputingDataType(cnmlBaseOp_t, cnmlTensor_t, cnmlDataType_t, cnmlQuantizedParam_t) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlSetQuantizedPositionByChannel(cnmlTensor_t, int*, int) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlSetQuantizedScaleByChannel(cnmlTensor_t, float*, int) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlCreateCastOp(cnmlBaseOp_t*, cnmlCastType_t, cnmlTensor_t, cnmlTensor_t) { return CNML_STATUS_UNSUPPORT; }
cnmlStatus_t cnmlComputeCastOpForward_V4(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*, cnrtQueue_t, void*) { return CNML_STATUS_UNSUPPORT; }
cnrtRet_t cnrtCreateQuantizedParam(cnrtQuantizedParam_t*, int, float, int) { return CNRT_RET_ERR_INVALID; }
cnrtRet_t cnrtDestroyQuantizedParam(cnrtQuantizedParam_t) { return CNRT_RET_ERR_INVALID; }
cnrtRet_t cnrtCastDataType(void*, cnrtDataType_t, void*, cnrtDataType_t, int, cnrtQuantizedParam_t) { return CNRT_RET_ERR_INVALID; }
}

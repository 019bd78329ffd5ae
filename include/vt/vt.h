/* vt.h - the whole public C API of libvt. What is not declared under
 * include/vt/ is not API. */
#ifndef VT_H
#define VT_H

#include "vt_common.h"
#include "vt_model.h"
#include "vt_tokenizer.h"
#include "vt_context.h"
#include "vt_sampler.h"
#include "vt_chat.h"
#include "vt_engine.h"
#include "vt_device.h"
#include "vt_lora.h"
#include "vt_grammar.h"

#endif /* VT_H */

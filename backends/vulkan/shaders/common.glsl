// Shared by every shader of the backend. Buffers are bound per tensor
// (vk-stream.cpp): the binding starts at the tensor's offset rounded down to
// minStorageBufferOffsetAlignment, and the push constants carry the rest
// (in elements of the binding's type). Large grids are 2-D dispatches
// (maxComputeWorkGroupCount[0] can be 65535): a workgroup's linear id is
// wg_linear(), and shaders bound it by the count they were given.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

uint wg_linear() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// f16 bits -> f32 (exact).
float h2f(uint h) { return unpackHalf2x16(h).x; }
// bf16 bits -> f32 (exact).
float b2f(uint h) { return uintBitsToFloat(h << 16); }

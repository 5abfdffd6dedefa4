/* A CUDA stream inside halox, by type.
 *
 * hx_stream is exactly cudaStream_t (a struct CUstream_st pointer, also in the CPU emulation of
 * tests/emu), spelled so that C sources (the halo front end, the engine's schedule) hold streams
 * without CUDA's headers and without void *. Streams of halox's own making come from the GPU
 * context (hx_gpu_ctx_stream); a stream from outside (the public API takes void *) becomes an
 * hx_stream only after hx_gpu_ctx_accept_stream found it on the context's device. */
#ifndef HX_GPU_STREAM_H
#define HX_GPU_STREAM_H

struct CUstream_st;
typedef struct CUstream_st *hx_stream;

#endif

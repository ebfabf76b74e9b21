// A user's device function, declared to parir with parir.external(..., header="smooth.cuh").
#pragma once

__device__ inline float smoothstep(double e0, double e1, float v) {
    float t = (v - (float)e0) / (float)(e1 - e0);
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    return t * t * (3.0f - 2.0f * t);
}

"""Array kernels: numpy in, numpy out; never imports xarray."""

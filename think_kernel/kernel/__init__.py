"""The think kernel and its Jupyter integration: the kernel, its app and provisioner, the
``%think`` magics, cell rendering, and the kernel's side of the link to the server."""

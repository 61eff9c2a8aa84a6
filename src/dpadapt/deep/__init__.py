"""Deep domain adaptation and generative models in PyTorch; import submodules directly, e.g. ``dpadapt.deep.swd_da``."""

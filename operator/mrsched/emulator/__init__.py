"""The node emulator: emulated Nodes whose kubelet runs pods against hidden physics or as real processes."""

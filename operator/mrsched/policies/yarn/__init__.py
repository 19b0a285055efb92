"""YARN's queue schedulers (Fair and Capacity) on the container model of :mod:`mrsched.core.yarn`, for the
simulator's YARN mode."""

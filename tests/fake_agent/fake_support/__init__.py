"""Helpers of the fake agent that have no counterpart in the real one."""

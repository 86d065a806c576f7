"""Tests of agcore_actors.cluster: ownership of sessions across hosts."""

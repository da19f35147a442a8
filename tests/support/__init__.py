"""Test support that runs real things: a live daphne server and the real kubectl binary."""

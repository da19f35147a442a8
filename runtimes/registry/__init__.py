"""runtimes.registry"""

"""runtimes.watch"""

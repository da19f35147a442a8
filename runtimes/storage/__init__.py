"""runtimes.storage"""

"""runtimes.controller.signing"""

"""runtimes.controller.oci.client"""

"""The SDK's version and the oldest server it works with."""

__version__ = "0.1.0"

# MIN_SERVER_VERSION is the oldest boxkite-server release whose API this SDK
# covers. Servers send their version in the Boxkite-Version header; "dev"
# builds and Go pseudo-versions (v0.0.0-…) are not checked.
MIN_SERVER_VERSION = "0.1.0"

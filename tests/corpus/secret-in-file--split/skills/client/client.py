import os

KEY = (
    "sk-live-"
    "0123456789abcdef"
)

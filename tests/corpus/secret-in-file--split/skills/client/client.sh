#!/bin/sh
KEY="sk-live-0123\
456789abcdef"

import{s as a,t as b}from"./chunk-7N7JZTIA.js";import"./chunk-WOT6VMZA.js";export{b as SubagentDiscoveryHandle,a as SubagentHandle};

pub mod check;
pub mod doctor;
pub mod policy;
pub mod run;
